#!/bin/sh
# xdplab.testbed vmlab: makes a guest's partitioned disk bootable. Runs inside a one-command QEMU
# guest (xdplab.testbed.qemu_exec) booted with the lab's kernel, the disk being built on /dev/vda:
# its first partition holds the lab's root file system. Installs that kernel in /boot, then, in a
# chroot into the disk (as a Debian installer does), GRUB in the disk's boot sector and gap, the menu
# (update-grub, /etc/default/grub of the image) and the kernel as the saved default entry.
#   disk-setup.sh <bzImage of the running kernel>
set -eu
# Anywhere but that guest /dev/vda is someone's disk: refuse.
if [ $# -ne 1 ] || [ "$(hostname)" != xdplab-guest ] || [ ! -f "$1" ]; then
    echo "disk-setup.sh: runs only inside xdplab.testbed's one-command guest, with the kernel file (got: $*)" >&2
    exit 2
fi
kernel="$1"
release="$(uname -r)"
disk=/dev/vda
mnt=/tmp/xdplab-disk
mkdir -p "$mnt"
mount -t ext4 "${disk}1" "$mnt"
mkdir -p "$mnt/boot"
cp "$kernel" "$mnt/boot/vmlinuz-$release"
chmod 0644 "$mnt/boot/vmlinuz-$release"
mount --bind /dev "$mnt/dev"
mount -t proc proc "$mnt/proc"
mount -t sysfs sys "$mnt/sys"
chroot "$mnt" grub-install --target=i386-pc "$disk"
chroot "$mnt" update-grub
entry="$(sed -n "s/.*menuentry_id_option '\(gnulinux-$release-advanced-[^']*\)'.*/\1/p" "$mnt/boot/grub/grub.cfg")"
if [ -z "$entry" ]; then
    echo "disk-setup: update-grub wrote no entry for $release" >&2
    exit 1
fi
chroot "$mnt" grub-set-default "$entry"
chroot "$mnt" grub-editenv list
umount "$mnt/sys" "$mnt/proc" "$mnt/dev"
umount "$mnt"
sync
echo "disk-setup: $release installed, default entry $entry"
