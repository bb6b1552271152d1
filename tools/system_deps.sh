#!/bin/sh
# System packages the Python wheels need but do not ship: open3d-cpu (PCD export) links libusb-1.0; the report's
# browser test opens the page in Debian's headless Chromium (/usr/bin/chromium).
# Installs them with apt when missing and we may (root, or passwordless sudo); otherwise says what to run.
set -e
missing=""
ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0' || missing="$missing libusb-1.0-0"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  apt_get="apt-get"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  apt_get="sudo -n apt-get"
else
  echo "ros_robodata needs system packages:$missing; install them with: sudo apt-get install$missing" >&2
  exit 1
fi
echo "installing system packages:$missing"
DEBIAN_FRONTEND=noninteractive $apt_get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  $apt_get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive $apt_get install -y --no-install-recommends $missing >/dev/null
}
