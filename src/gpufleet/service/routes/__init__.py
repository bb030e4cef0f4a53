"""The API's routes, one module per resource; each translates HTTP to a call on ``Service``."""
