"""How the CLI's requests may travel: bodies as Python literals.

The CLI writes a request body with `ascii()` (no import at all, where the standard library's `json`
brings `re` along: several milliseconds of every command) and sends it as LITERAL; the controller
reads it with `ast.literal_eval`, which evaluates nothing but literals (strings, numbers, tuples,
lists, dicts, sets, booleans, None: no names, calls or operators), and hands the routes JSON.
Bodies over LITERAL_MAX bytes go as JSON, which the controller parses faster.
"""

LITERAL = "application/x-python-literal"
LITERAL_MAX = 1 << 20
