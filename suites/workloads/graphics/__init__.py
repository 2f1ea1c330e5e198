"""The 3D half of the mixed workload: CAD-like viewsets replayed headless, and apitrace traces.

Modules: ``scene`` (procedural parts and meshes), ``frametrace`` (the trace
file format), ``viewsets`` (the suite's viewsets and their recorder),
``renderer`` (moderngl over EGL), ``checks`` (pixel checksums), ``replay``
(the ``graphics-replay`` workload) and ``apitrace`` (``apitrace-replay``).
"""
