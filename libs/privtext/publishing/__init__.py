"""The parts of the ``publish`` stage (``privtext.stages.publish``) that need no Spark session and no ledger:
the gate's checks (``gate``), the export's files and their commit (``files``) and its manifest (``manifest``).
The stage reads the lakehouse and the ledger and hands these plain values."""
