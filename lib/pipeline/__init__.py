"""The collection pipeline: the record stream, the stages (list, read, prepare,
publish), the driver pool, the retain rule, sync and targeted refresh. The command
line, the host and the worker all run it; none of them holds its logic."""
