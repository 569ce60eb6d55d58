"""argparse for slurmlet's own commands (`slurmlet simulate|translate|secrets`, `air`): a usage
error is one line on stderr and exit code 2."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")
