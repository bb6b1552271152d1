"""Replaying an episode for review: the playback clock and plan (player node) and what is drawn over it (overlay
node). Nothing here imports rclpy; the nodes in ros_robodata/nodes/ only publish what this computes."""
