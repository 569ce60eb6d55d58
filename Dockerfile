# slurmlet in a container: one image for the controller (slurmctld), the agents (c1, c2, ...) and the
# login node. Built by docker-compose.yml; see the README's "Test cluster" section.
FROM python:3.11-slim

# the package from the build context, with its console scripts (slurmlet, sbatch, squeue, ...)
WORKDIR /opt/slurmlet
COPY pyproject.toml README.md ./
COPY cli ./cli
COPY common ./common
COPY controller ./controller
COPY nodeagent ./nodeagent
RUN pip install --no-cache-dir . \
    && mkdir -p /data /etc/slurm /etc/slurmlet /var/lib/slurmlet

# the controller's port (Slurm's SlurmctldPort)
EXPOSE 6817
# jobs are submitted from, and write their output to, the shared /data volume
WORKDIR /data
CMD ["slurmlet", "--help"]
