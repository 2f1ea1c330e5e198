"""``backend=vm``: guests as QEMU/KVM virtual machines (TCG where KVM cannot run), GPUs by VFIO or mdev vGPU."""
