"""GPU and CPU observation: NVML query wrapper, device inventory, background sampler."""
