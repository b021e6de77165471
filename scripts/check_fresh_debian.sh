#!/usr/bin/env bash
# Developer check: runs a README command in a fresh Debian 12 root (debootstrap, minbase), on a clone
# of the committed HEAD, as a new user would. Needs root, debootstrap and network access to Debian.
#   usage: sudo bash scripts/check_fresh_debian.sh [ROOTDIR] [test|default]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/tmp/deepinfer-fresh-root}
which_cmd=${2:-test}
if [ ! -x "$root/bin/bash" ]; then
  debootstrap --variant=minbase bookworm "$root"
fi
rm -rf "$root/root/deepinfer"
git clone -q "$repo" "$root/root/deepinfer"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
script=scripts/test.sh
[ "$which_cmd" = default ] && script=scripts/run_default.sh
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c "cd /root/deepinfer && bash $script"
