# ipykernel configuration for Burrow's code-interpreter contexts (loaded with --config).
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# Tracebacks as plain text: no ANSI colour codes in error values sent to clients.
c.InteractiveShell.colors = "NoColor"
# Reprs are never cut short: the client receives the whole value.
c.PlainTextFormatter.max_seq_length = 0
# No history database: nothing to write in the user's home, and a faster start.
c.HistoryManager.enabled = False
# Rich results (DataFrames as data, matplotlib figures as chart data, lists and dicts as JSON).
c.IPKernelApp.extensions = ["burrow_kernel"]
