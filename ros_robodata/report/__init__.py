"""One self-contained HTML page that shows a reviewer what `robodata score` found, and where.

The numbers come from what `robodata score` wrote (quality_summary.json, each episode's quality.json and
events.json): nothing is checked again here. The bags are opened only for what a person has to see: the arm,
gripper and wrist signals around each finding, and the camera frames at the flagged moments. Each bag is
streamed once; signals are reduced to min/max envelopes while they are read and only the frames that will be
shown are decoded, so memory stays bounded however long an episode is. The page embeds its figures and
thumbnails as data: URIs, so it opens offline and can be mailed or attached to a ticket as one file. Only the worst
episodes are drawn (`--episodes`); every episode is one row of a table the page's own script draws from compact JSON
(episode_table.py), so the page grows with what is detailed, not with the dataset.
"""

from ros_robodata.report.build import REPORT_FILE, ReportResult, report_dataset, report_items, write_report

__all__ = ['REPORT_FILE', 'ReportResult', 'report_dataset', 'report_items', 'write_report']
