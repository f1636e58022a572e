#!/usr/bin/env bash
# Start a real single-node SLURM (Debian's slurm-wlm + munge) with two stand-in GPUs, for the
# cluster tests. Needs root. Idempotent: does nothing when the node already answers.
# Usage: tests/slurm/start_slurm.sh [STATE_DIR]   (default: /var/tmp/geko-slurm)
set -euo pipefail
state=${1:-/var/tmp/geko-slurm}
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm-wlm and munge are not installed (apt-get install -y slurm-wlm munge)" >&2
  exit 1
fi
if sinfo -h -o %T 2>/dev/null | grep -qE "idle|mix|alloc"; then
  exit 0
fi
host=$(hostname)
mkdir -p "$state"/state "$state"/spool /etc/slurm /etc/munge /run/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || munged --force
cat > /etc/slurm/slurm.conf <<CONF
GresTypes=gpu
ClusterName=geko
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$state/jobcomp.log
NodeName=$host CPUs=$(nproc) RealMemory=8000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
cat > /etc/slurm/gres.conf <<CONF
NodeName=$host Name=gpu File=/dev/null Count=1
NodeName=$host Name=gpu File=/dev/zero Count=1
CONF
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qE "idle|mix|alloc"; then exit 0; fi
  sleep 0.5
done
echo "SLURM did not come up; see $state/slurmctld.log and $state/slurmd.log" >&2
exit 1
