"""The six steps of a cycle, one module each, each defining the Protocol its policies implement."""
