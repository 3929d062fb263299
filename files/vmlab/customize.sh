#!/bin/sh
# xdplab.testbed vmlab guest image: mmdebstrap customize hook, run with the image root as $1.
# Adds the lab user (no password: key only, through the lab share at boot), sudo for it, sshd's
# settings, the init and busybox init's inittab, and GRUB's settings for a guest that boots from its disk.
set -eu
if [ $# -ne 1 ] || [ ! -d "$1/etc" ] || [ "$(readlink -f "$1")" = / ]; then
    echo "customize.sh: needs one argument, the image root being built (got: $*)" >&2
    exit 2
fi
root="$1"
here="$(dirname "$(readlink -f "$0")")"
chroot "$root" useradd --create-home --shell /bin/bash --user-group xdplab
chroot "$root" passwd --lock xdplab >/dev/null
install -m 0440 "$here/sudoers" "$root/etc/sudoers.d/xdplab"
install -m 0644 "$here/sshd_config" "$root/etc/ssh/sshd_config.d/xdplab.conf"
install -m 0755 "$here/xdplab-init" "$root/usr/local/sbin/xdplab-init"
install -m 0644 "$here/inittab" "$root/etc/inittab"
install -m 0644 "$here/grub" "$root/etc/default/grub"
mkdir -p "$root/boot"
printf '/dev/vda / ext4 rw 0 1\n' > "$root/etc/fstab"
printf 'xdplab-vmlab\n' > "$root/etc/hostname"
printf '127.0.0.1 localhost\n' > "$root/etc/hosts"
# The wheels the prerequisites step installs have no index in the guest: pip must not look for one.
printf '[global]\nno-index = true\ndisable-pip-version-check = true\n' > "$root/etc/pip.conf"
test -x "$root/usr/sbin/sshd" && test -x "$root/bin/busybox" && test -x "$root/usr/bin/python3"
