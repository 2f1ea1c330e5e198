#!/bin/busybox sh
# PID 1 of a suite VM (packed into the initramfs by suites/backends/vm/image.py). It loads the virtio modules,
# mounts the host's root read-only over virtiofs, and runs the guest the host's boot script describes, with the
# guest protocol on the virtio-serial port named "bench" and everything else on the serial console (the host's
# <guest>.log). Kernel parameters: bench.boot=<host path of the boot script>, or bench.probe=1 (a test boot: say
# so and power off, nothing mounted).
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
say() { echo "bench-vm: $*" >/dev/console; }
param() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p"; }
stop() { sync; poweroff -f; }
if [ "$(param bench.probe)" = 1 ]; then say "probe booted"; stop; fi
for m in $(cat /lib/modules/order); do insmod "/lib/modules/$m" || say "insmod $m failed"; done
# An image with an NVIDIA driver (make setup-vm VM_DRIVER=...): its modules load only when the VM's PCI bus has an
# NVIDIA device (vendor 0x10de), and its device nodes are made here (devtmpfs makes none for them). What it found is
# said on the console and kept in /run/bench-vm/nvidia.txt for the guest (its placement note; suites/guest/vm.py).
noted=""
note() { say "$*"; noted="$noted$*
"; }
gpus=""
if [ -d /nvidia/modules ]; then
  v="$(cat /nvidia/version)"
  fw="$(cd "/lib/firmware/nvidia/$v" 2>/dev/null && ls gsp_*.bin 2>/dev/null | tr '\n' ' ')"
  for d in /sys/bus/pci/devices/*; do [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] && gpus="$gpus ${d##*/}"; done
  if [ -z "$gpus" ]; then
    note "nvidia module: not loaded: no NVIDIA device on the VM's PCI bus (driver $v)"
    note "nvidia firmware: ${fw:-none }in /lib/firmware/nvidia/$v, not loaded: no NVIDIA device"
  else
    failed=""
    for m in nvidia nvidia-uvm nvidia-modeset; do insmod "/nvidia/modules/$m.ko" 2>/dev/null || failed="$failed $m"; done
    if [ -n "$failed" ]; then
      note "nvidia module: insmod failed for$failed ($(dmesg | grep -E 'NVRM|nvidia' | tail -1))"
    else
      note "nvidia module: driver $(cat /sys/module/nvidia/version 2>/dev/null || echo "$v") loaded for$gpus"
    fi
    mknod -m 666 /dev/nvidiactl c 195 255
    i=0; for g in $gpus; do mknod -m 666 "/dev/nvidia$i" c 195 "$i"; i=$((i + 1)); done
    uvm="$(sed -n 's/^\([0-9]*\) nvidia-uvm$/\1/p' /proc/devices)"
    [ -n "$uvm" ] && mknod -m 666 /dev/nvidia-uvm c "$uvm" 0 && mknod -m 666 /dev/nvidia-uvm-tools c "$uvm" 1
  fi
fi
port=""
for p in /sys/class/virtio-ports/*; do [ "$(cat "$p/name" 2>/dev/null)" = bench ] && port="/dev/${p##*/}"; done
[ -n "$port" ] || { say "no virtio-serial port named bench"; stop; }
mkdir -p /host
mount -t virtiofs -o ro host /host || { say "cannot mount the host's root (virtiofs tag host)"; stop; }
# The host's root is read-only: the guest's own /proc, /sys, /dev and writable scratch in its own memory.
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/shm
for d in run dev/shm; do mount -t tmpfs -o mode=1777 tmpfs "/host/$d"; done
if [ -d /nvidia/lib ]; then  # the image's user-space, not the host's (whose version may differ): /run/nvidia
  mkdir -p /host/run/nvidia && mount -o bind /nvidia /host/run/nvidia
  smi() { LD_LIBRARY_PATH=/run/nvidia/lib chroot /host /run/nvidia/bin/nvidia-smi "$@" 2>&1; }
  while read -r line; do [ -n "$line" ] && note "nvidia-smi: $line"; done <<SMI
$(smi -L | head -5)
SMI
  if [ -n "$gpus" ]; then  # the GPU's first open (nvidia-smi's) loaded its GSP firmware, or failed to
    bad="$(dmesg | grep -m1 -iE 'firmware load for nvidia/|RmFetchGspRmImages|GSP.*(fail|error)')"
    gsp="$(smi -q | sed -n 's/^ *GSP Firmware Version *: *//p' | head -1)"
    note "nvidia firmware: ${bad:-GSP firmware ${gsp:-(version not said)} running (nvidia-smi -q)}"
  fi
  egl=/run/nvidia/egl_vendor.d/10_nvidia.json
  if [ -f "/host$egl" ] && [ -e /host/run/nvidia/lib/libEGL_nvidia.so.0 ]; then
    note "nvidia EGL: vendor file $egl, library /run/nvidia/lib/libEGL_nvidia.so.0"
  else
    note "nvidia EGL: none in the image (a CAD guest renders with the host view's EGL)"
  fi
fi
mkdir -p /host/run/bench-vm && printf '%s' "$noted" > /host/run/bench-vm/nvidia.txt
boot="$(param bench.boot)"
say "booted in $(cut -d' ' -f1 /proc/uptime) s; running $boot"
exec 3<>"$port"  # a virtio-serial port opens once: one descriptor for both directions
chroot /host /bin/sh "$boot" <&3 >&3 2>/dev/console
say "guest exited with code $?"
stop
