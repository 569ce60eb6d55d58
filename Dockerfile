# slurmlet in a container: one image for the controller (slurmctld), the agents (c1, c2, ...) and the
# login node. Built by docker-compose.yml; see the README's "Test cluster" section.
FROM python:3.11-slim

# Wheels in docker/wheelhouse (docker/offline/wheelhouse.sh) make the build offline: torch and
# slurmlet's dependencies come from there alone. Without them pip asks PyPI (torch: its CPU build).
# torch and numpy are for the examples (examples/llama-sft) that the nodes run.
COPY docker/wheelhouse /opt/wheels
RUN if ls /opt/wheels/torch-*.whl >/dev/null 2>&1; then \
      pip install --no-cache-dir --no-index --find-links /opt/wheels torch numpy; \
    elif ls /opt/wheels/*.whl >/dev/null 2>&1; then \
      echo "the wheelhouse has no torch: the image has none (the examples need it)"; \
    else \
      pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch numpy; \
    fi

# the package from the build context, with its console scripts (slurmlet, sbatch, squeue, ...)
WORKDIR /opt/slurmlet
COPY pyproject.toml README.md ./
COPY cli ./cli
COPY common ./common
COPY controller ./controller
COPY nodeagent ./nodeagent
RUN if ls /opt/wheels/*.whl >/dev/null 2>&1; then \
      pip install --no-cache-dir --no-index --find-links /opt/wheels .; \
    else \
      pip install --no-cache-dir .; \
    fi
# the commands on the search path of login shells (`#!/bin/bash -l`) and `env -i` shells: the
# administrator's step of the README ("Using a local cluster"). pip put them in /usr/local/bin itself
# here, so it links nothing, but an installation elsewhere (a virtual environment) gets its links.
RUN slurmlet install-commands --prefix /usr/local
# the examples (the migration guide's llama-sft among them): copy one to /data to run it
COPY examples ./examples

# the shared /data volume takes this directory's mode on first use: every user writes there, as in /tmp
RUN mkdir -p /data /etc/slurm /etc/slurmlet /var/lib/slurmlet && chmod 1777 /data
# ordinary users, the same on every node (as a site's directory service makes them): jobs run as them
RUN useradd -m -u 1000 -s /bin/bash alice && useradd -m -u 1001 -s /bin/bash bob

# the controller's port (Slurm's SlurmctldPort)
EXPOSE 6817
# jobs are submitted from, and write their output to, the shared /data volume
WORKDIR /data
CMD ["slurmlet", "--help"]
