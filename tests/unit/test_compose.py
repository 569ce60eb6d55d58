"""docker-compose.yml and the Dockerfile against the CLI they run (no Docker needed).

Every `command:` of a service built from the Dockerfile must start a console script that
pyproject.toml declares, with a subcommand `slurmlet` knows and only options its `--help` lists;
node names, addresses and the controller URL must agree, /data must be shared.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from functools import cache
from pathlib import Path

import pytest
import yaml

from tests.conftest import BIN, ROOT

COMPOSE = ROOT / "docker-compose.yml"
CONTROLLER_URL = "http://slurmctld:6817,http://slurmctld2:6817"  #: the primary, then the backup
KEY_FILE = "/etc/slurmlet/slurmlet.key"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict) -> dict[str, dict]:
    return compose["services"]


def console_scripts() -> set[str]:
    """The commands the package installs (its own launchers, cli/bin/)."""
    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["script-files"]
    return {Path(f).name for f in files}


@cache
def help_options(*argv: str) -> dict[str, bool]:
    """The options a command's argparse --help lists: option -> whether it takes a value."""
    out = subprocess.run([str(BIN / argv[0]), *argv[1:], "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    opts: dict[str, bool] = {}
    for m in re.finditer(r"(?<![\w-])(--?[A-Za-z][\w-]*)( [A-Z][A-Z_]*)?", out.stdout):
        opts[m.group(1)] = opts.get(m.group(1), False) or bool(m.group(2))
    return opts


def slurmlet_subcommands() -> set[str]:
    usage = subprocess.run([str(BIN / "slurmlet"), "--help"], capture_output=True, text=True, timeout=30).stdout
    return set(re.search(r"\{([\w,-]+)\}", usage).group(1).split(","))


def argv_of(service: dict) -> list[str]:
    """The service's command as the program sees it; `sh -c 'exec slurmlet ...'` unwrapped."""
    cmd = service["command"]
    argv = shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]
    if argv[:2] == ["sh", "-c"]:
        script = argv[2].replace("$$", "$")
        if script.startswith("exec "):
            argv = shlex.split(script[len("exec "):])
    return argv


def options_of(argv: list[str]) -> dict[str, str | None]:
    """`--opt value` pairs of a daemon command line (after `slurmlet SUBCOMMAND`)."""
    out: dict[str, str | None] = {}
    i = 2
    while i < len(argv):
        assert argv[i].startswith("-"), f"stray argument {argv[i]!r} in {argv}"
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            out[argv[i]] = None
            i += 1
    return out


def slurmlet_services(services: dict[str, dict]) -> dict[str, dict]:
    return {name: s for name, s in services.items() if s.get("build") == "."}


def agents(services: dict[str, dict]) -> dict[str, dict]:
    return {name: s for name, s in services.items() if re.fullmatch(r"c\d+", name)}


def test_expected_services(services: dict[str, dict]) -> None:
    assert {"slurmctld", "postgres", "c1", "c2", "login"} <= set(services)
    assert services["postgres"]["image"].startswith("postgres")
    assert set(slurmlet_services(services)) >= {"slurmctld", "c1", "c2", "login"}


def test_agents_share_one_template(compose: dict, services: dict[str, dict]) -> None:
    """c1, c2, ... come from the x-agent extension field: a new node is one more cN entry."""
    text = COMPOSE.read_text()
    assert "x-agent" in compose
    for name in agents(services):
        assert re.search(rf"^  {name}:\n    <<: \*agent$", text, re.M), f"{name} does not use the agent template"


def test_commands_are_console_scripts_with_known_options(services: dict[str, dict]) -> None:
    scripts = console_scripts()
    subcommands = slurmlet_subcommands()
    checked = 0
    for name, s in slurmlet_services(services).items():
        argv = argv_of(s)
        if name == "key":
            continue  # a shell line making the key
        assert argv[0] in scripts, f"{name}: {argv[0]} is not a console script"
        assert argv[0] == "slurmlet" and argv[1] in subcommands, f"{name}: {argv[:2]}"
        known = help_options("slurmlet", argv[1])
        for opt, value in options_of(argv).items():
            assert opt in known, f"{name}: `slurmlet {argv[1]}` has no option {opt}"
            assert known[opt] == (value is not None), f"{name}: {opt} {'needs' if known[opt] else 'takes no'} value"
        checked += 1
    assert checked >= 3


def test_controller_listens_on_6817_with_postgres(services: dict[str, dict]) -> None:
    argv = argv_of(services["slurmctld"])
    assert argv[:2] == ["slurmlet", "controller"]
    opts = options_of(argv)
    assert opts["--listen"] == "0.0.0.0:6817"
    db = opts["--db"]
    assert db.startswith("postgresql://") and "@postgres:5432/" in db
    env = services["postgres"]["environment"]
    assert db == f"postgresql://{env['POSTGRES_USER']}:{env['POSTGRES_PASSWORD']}@postgres:5432/{env['POSTGRES_DB']}"
    assert opts["--key-file"] == KEY_FILE
    state = opts["--state-dir"]
    assert any(v.split(":")[1] == state for v in services["slurmctld"]["volumes"]), "the state is not in a volume"
    conf = opts["--config"]
    mount = next(v for v in services["slurmctld"]["volumes"] if v.split(":")[1] == conf)
    assert (ROOT / mount.split(":")[0]).is_file()
    assert services["slurmctld"]["ports"] == ["${SLURMLET_PORT:-6817}:6817"]  # the host's side configurable
    assert {"postgres", "key"} <= set(services["slurmctld"]["depends_on"])


def test_compose_slurm_conf_loads() -> None:
    from slurmlet.controller.config import load_config
    conf = load_config(str(ROOT / "docker" / "slurm.conf"))
    assert conf.partitions and conf.partitions[0].nodes is None, "agents of any name must join (Nodes=ALL)"
    assert not conf.warnings, conf.warnings


def test_the_backup_controller_shares_the_primarys_command_database_and_slurm_conf(services: dict[str, dict]) -> None:
    primary, backup = services["slurmctld"], services["slurmctld2"]
    assert argv_of(backup) == argv_of(primary)  # (each finds its SlurmctldHost line by its host name)
    assert (primary["hostname"], backup["hostname"]) == ("slurmctld", "slurmctld2")
    conf = (ROOT / "docker" / "slurm.conf").read_text()
    hosts = [line.split("=", 1)[1] for line in conf.splitlines() if line.startswith("SlurmctldHost=")]
    assert hosts == ["slurmctld", "slurmctld2"]  # the order the clients are given them in
    assert [u.split("//")[1].split(":")[0] for u in CONTROLLER_URL.split(",")] == hosts
    assert "slurmctld" in backup["depends_on"]  # (the primary starts first and holds the lease)
    assert "ctld2-state:/var/lib/slurmlet" in backup["volumes"]
    assert "/api/v1/ping" in " ".join(backup["healthcheck"]["test"])  # (answered in standby too)


def test_agents_names_addresses_and_controller(services: dict[str, dict]) -> None:
    names = agents(services)
    assert len(names) >= 2
    for name, s in names.items():
        opts = options_of(argv_of(s))
        assert opts["--controller"] == CONTROLLER_URL
        assert opts["--name"] == name and opts["--addr"] == name, f"{name}: name/addr {opts}"
        assert s.get("hostname") == name
        assert opts["--key-file"] == KEY_FILE
        assert opts["--spool"].endswith(f"/{name}"), "each node its own spool directory"
        assert "slurmctld" in s["depends_on"]
    scaled = options_of(argv_of(services["cx"]))
    assert scaled["--controller"] == CONTROLLER_URL and "--name" not in scaled  # the container's hostname


def test_login_has_the_cli(services: dict[str, dict]) -> None:
    login = services["login"]
    argv = argv_of(login)  # its credd: users who may not read the key get their credentials there
    assert argv[:2] == ["slurmlet", "credd"] and options_of(argv)["--key-file"] == KEY_FILE
    assert login["environment"]["SLURMLET_CONTROLLER"] == CONTROLLER_URL
    assert login["environment"]["SLURMLET_KEY_FILE"] == KEY_FILE
    assert login["working_dir"] == "/data"
    assert login["healthcheck"]["test"][1] in console_scripts()


def test_data_and_key_shared(compose: dict, services: dict[str, dict]) -> None:
    assert "data" in compose["volumes"] and "keys" in compose["volumes"]
    for name in ["slurmctld", "login", *agents(services)]:
        vols = services[name]["volumes"]
        assert "data:/data" in vols, f"{name} does not mount /data"
        assert "keys:/etc/slurmlet:ro" in vols, f"{name} does not see the cluster key"
        assert services[name]["environment"]["SLURMLET_KEY_FILE"] == KEY_FILE
    key = " ".join(argv_of(services["key"]))
    assert KEY_FILE in key and "umask 077" in key and "keys:/etc/slurmlet" in services["key"]["volumes"]


def test_healthchecks_use_real_endpoints(services: dict[str, dict]) -> None:
    test = services["slurmctld"]["healthcheck"]["test"]
    assert "/api/v1/ping" in " ".join(test) and ":6817/" in " ".join(test)
    assert '@router.get("/api/v1/ping")' in (ROOT / "controller" / "api" / "admin.py").read_text()  # the route exists
    assert services["postgres"]["healthcheck"]["test"][1] == "pg_isready"


def test_dockerfile_installs_the_package_and_exposes_6817() -> None:
    text = (ROOT / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    assert "EXPOSE 6817" in lines
    # the package from the build context (from the wheelhouse's wheels when there are some)
    assert any(re.search(r"\bpip install (--\S+ )*(/opt/wheels )?\.(;| |$)", line) for line in lines)
    # then the commands on the search path of login shells, by the documented step (no daemon places them)
    installs = [i for i, line in enumerate(lines) if re.search(r"\bpip install (--\S+ )*(/opt/wheels )?\.(;| |$)", line)]
    assert lines.index("RUN slurmlet install-commands --prefix /usr/local") > max(installs)
    copied = {line.split()[1] for line in lines if line.startswith("COPY")}
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    for folder in folders:
        assert folder in copied, f"the image lacks the {folder} folder"
    assert "pyproject.toml" in " ".join(copied)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and not any(p in ignored for p in folders)
