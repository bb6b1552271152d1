"""Recording episodes: what the recorder node does, without ROS (tested and reused offline)."""
