"""argparse for slurmlet's own commands (`slurmlet simulate|translate|secrets`, `air`): a usage
error is one line on stderr and exit code 2."""

from __future__ import annotations

import argparse


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: ANN201 - NoReturn
        self.exit(2, f"{self.prog}: error: {message}\n")
