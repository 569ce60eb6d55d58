"""The dashboard in a real browser: headless Chromium (Debian's `chromium`, which test.sh installs where
it can) driven by Playwright against a live local cluster. Skipped where there is no browser, unless
SLURMLET_REQUIRE_BROWSER=1 (which .ci/run sets) makes that a failure."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import BIN, Cluster, serve

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser_path() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


@pytest.fixture(scope="module")
def browser():
    path = browser_path()
    why = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = "Playwright is not installed"
    if why is None and path is None:
        why = "no Chromium here (apt install chromium)"
    if why:
        if os.environ.get("SLURMLET_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests required: {why}")
        pytest.skip(why)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory: pytest.TempPathFactory):
    # (multifactor weights: the job page shows sprio's factors, which need them)
    yield from serve(Cluster(tmp_path_factory.mktemp("dash"), nodes=2, cpus=4, gpus=4,
                             extra_conf="PriorityType=priority/multifactor\nPriorityWeightAge=1000\n"
                                        "PriorityWeightJobSize=100\nPriorityMaxAge=1-0\n"))


def token_for(c: Cluster, user: str | None = None) -> str:
    r = c.run([str(BIN / "scontrol"), "token", "lifespan=3600", *([f"username={user}"] if user else [])])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().removeprefix("SLURM_JWT=")
