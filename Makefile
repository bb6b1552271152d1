# ros_robodata: `make demo` and `make test` set up everything they need on first use:
#   system libraries some wheels link (libusb-1.0 for open3d), with apt when missing (tools/system_deps.sh)
#   .venv (Python 3.11, pinned ROS 2 Jazzy wheels and every dependency, requirements.txt)
#   the CMake path repair of those wheels, inside .venv (tools/repair_ros_wheels.py)
#   colcon build of the interfaces into install/, and the venv hook that sees it (tools/venv_hook.py)
#   an editable install of ros_robodata with the `robodata` command
# A second run with nothing changed does nothing but the job itself.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
COLCON_SOURCES := package.xml CMakeLists.txt $(wildcard msg/*.msg srv/*.srv scripts/* launch/* config/*)

STAMP_SYSTEM := $(VENV)/.robodata-system
STAMP_VENV := $(VENV)/.robodata-requirements
STAMP_EDITABLE := $(VENV)/.robodata-editable
STAMP_COLCON := install/.robodata-colcon

.PHONY: demo test setup lint docs clean distclean

setup: $(STAMP_VENV) $(STAMP_COLCON) $(STAMP_EDITABLE)

# The simulated cell and the recorder on real DDS, 6 scripted episodes into robodata_demo/dataset
# (e.g. make demo DEMO_ARGS='--episodes 2 --seed 7'; see robodata demo --help).
DEMO_ARGS ?=
demo: setup
	$(VENV)/bin/robodata demo $(DEMO_ARGS)

test: setup
	$(VENV)/bin/ruff check ros_robodata test bench tools
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy
	$(PY) -m pytest -q test

lint: setup
	$(VENV)/bin/ruff check ros_robodata test bench tools
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

# The documentation site, offline: docs/cli.md from the parser, then MkDocs into build/site/ (no warning allowed).
docs: setup
	$(PY) tools/cli_reference.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet
	@echo "docs: build/site/index.html"

# System libraries some wheels link (libusb-1.0 for open3d): apt, when missing and allowed (tools/system_deps.sh).
$(STAMP_SYSTEM): tools/system_deps.sh
	sh tools/system_deps.sh
	@mkdir -p $(VENV) && touch $@

$(STAMP_VENV): requirements.txt $(STAMP_SYSTEM)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	$(PY) tools/repair_ros_wheels.py
	@touch $@

$(STAMP_EDITABLE): $(STAMP_VENV) pyproject.toml setup.py
	$(PIP) install -q --no-deps --no-build-isolation -e .
	@touch $@

$(STAMP_COLCON): $(STAMP_VENV) $(COLCON_SOURCES)
	@mkdir -p build
	env AMENT_PREFIX_PATH=$(CURDIR)/$(VENV) CMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	  $(VENV)/bin/colcon --log-base build/log build --base-paths . --build-base build/colcon --install-base install \
	  --merge-install --event-handlers console_cohesion- summary- --cmake-args -DBUILD_TESTING=OFF \
	  -DPython3_EXECUTABLE=$(CURDIR)/$(PY) -Wno-dev > build/colcon.log 2>&1 || { tail -n 40 build/colcon.log; exit 1; }
	$(PY) tools/venv_hook.py install
	@touch $@

clean:
	rm -rf build install

distclean: clean
	rm -rf $(VENV)

# The Label Studio server and label-studio-sdk in a venv of their own (.venv-labelstudio, pinned in
# tools/labelstudio-requirements.txt): `robodata review push/pull` and the Label Studio tests use it. The test
# fixture makes it on first use as well.
labelstudio: setup
	$(PY) tools/labelstudio_env.py
