"""ros_robodata: robot demonstrations recorded, segmented, checked and exported as training data."""

# The generated interface modules (ros_robodata.msg, ros_robodata.srv) are installed by colcon into
# the install tree's copy of this package; let both halves form one package.
__path__ = __import__('pkgutil').extend_path(__path__, __name__)

__version__ = '0.1.0'
