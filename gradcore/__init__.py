"""What the engine and the client both know, with no dependency at all: the result-count
rule of an op, the messages both raise, the version. The engine imports it, the client
imports it; neither imports the other (``import client`` stays light)."""
