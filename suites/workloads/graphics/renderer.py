"""Headless OpenGL through EGL (moderngl): upload a scene, draw trace frames, read pixels.

On NVIDIA the EGL device platform gives the GPU; without one Mesa's llvmpipe
renders on the CPU (GL 4.5). Everything the replayer allocates on the device
goes through :func:`memory_need` first, so a profile's framebuffer bounds it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from gpu_probe.shapes import JsonObject
from suites.errors import BenchError, first_line
from suites.workloads.graphics import scene
from suites.workloads.graphics.frametrace import Frame

# a moderngl Context (moderngl is imported where a context is made: a runner without it still imports this)
GlContext: TypeAlias = Any

SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "lavapipe")

VERTEX = """#version 330
uniform mat4 mvp; uniform mat4 model;
in vec3 in_pos; in vec3 in_norm;
out vec3 v_world; out vec3 v_norm;
void main() {
    v_world = (model * vec4(in_pos, 1.0)).xyz;
    v_norm = mat3(model) * in_norm;
    gl_Position = mvp * vec4(in_pos, 1.0);
}"""

FRAGMENT = """#version 330
uniform vec4 color; uniform vec3 eye; uniform int mode; uniform sampler2D tex;
in vec3 v_world; in vec3 v_norm;
out vec4 frag;
void main() {
    if (mode == 1) { frag = vec4(0.05, 0.05, 0.08, 1.0); return; }  // wireframe lines
    vec3 n = normalize(v_norm);
    vec3 v = normalize(eye - v_world);
    if (dot(n, v) < 0.0) n = -n;  // CAD models are rarely closed: light both faces
    vec3 l = normalize(vec3(0.4, 0.3, 0.85));
    vec3 base = color.rgb;
    if (mode == 2) {  // triplanar: no UVs needed, every part gets texture work
        vec3 w = abs(n) / (abs(n).x + abs(n).y + abs(n).z);
        vec3 s = v_world * 1.5;
        base *= texture(tex, s.yz).rgb * w.x + texture(tex, s.xz).rgb * w.y + texture(tex, s.xy).rgb * w.z;
    }
    float diff = max(dot(n, l), 0.0);
    float spec = pow(max(dot(n, normalize(l + v)), 0.0), 32.0);
    frag = vec4(base * (0.25 + 0.75 * diff) + 0.25 * spec, color.a);
}"""


class GraphicsUnavailable(BenchError):
    """No usable EGL/OpenGL here."""


@dataclass
class MemoryNeed:
    buffers_MiB: float
    textures_MiB: float
    targets_MiB: float

    @property
    def total_MiB(self) -> float:
        return self.buffers_MiB + self.textures_MiB + self.targets_MiB

    def describe(self) -> str:
        return (f"{self.total_MiB:.0f} MiB (buffers {self.buffers_MiB:.0f}, textures {self.textures_MiB:.0f}, "
                f"render targets {self.targets_MiB:.0f})")


def memory_need(meshes: list[scene.Mesh], textured: bool, resolution: tuple[int, int], samples: int,
                texture_size: int) -> MemoryNeed:
    mib = 1024.0 * 1024.0
    w, h = resolution
    targets = w * h * samples * 8 + (w * h * 4 if samples > 1 else 0)  # RGBA8 + D24S8 (+ resolve)
    tex = texture_size * texture_size * 4 * 4 / 3 if textured else 0  # RGBA8 with mipmaps
    return MemoryNeed(sum(m.nbytes for m in meshes) / mib, tex / mib, targets / mib)


def create_context(libegl: str | None = None, device_index: int = 0) -> GlContext:
    """A standalone core-profile context; no EGL is one clear line, never a crash."""
    try:
        import moderngl
    except ImportError as exc:
        raise GraphicsUnavailable(f"moderngl is not installed ({exc}); install the graphics extra") from None
    kwargs: JsonObject = {"standalone": True, "backend": "egl", "require": 330, "device_index": device_index}
    if libegl:
        kwargs["libegl"] = libegl
    try:
        return moderngl.create_context(**kwargs)
    except Exception as exc:
        raise GraphicsUnavailable(f"no EGL OpenGL context ({first_line(exc, 10_000)}); without a GPU install Mesa's "
                                  "libegl1 libegl-mesa0 libgl1-mesa-dri (make setup-system)") from None


def renderer_string(ctx: GlContext) -> str:
    return f"{ctx.info['GL_RENDERER']} | {ctx.info['GL_VERSION']}"


def is_software(ctx: GlContext) -> bool:
    return any(s in ctx.info["GL_RENDERER"].lower() for s in SOFTWARE_RENDERERS)


def procedural_texture(size: int, seed: int) -> np.ndarray:
    """Concrete-ish noise over a brick pattern: enough texel variety for the sampler to do work."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    bricks = ((np.floor(y * 16) % 2) * 0.5 + x * 8) % 1.0 > 0.06
    mortar = (y * 16) % 1.0 > 0.1
    base = 0.7 + 0.3 * rng.random((size, size))
    img = np.stack([base * (0.6 + 0.4 * bricks * mortar)] * 3, axis=-1)
    img[..., 0] *= 1.05
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def perspective(fov_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / np.tan(np.radians(fov_deg) / 2)
    return np.array([[f / aspect, 0, 0, 0], [0, f, 0, 0],
                     [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)], [0, 0, -1, 0]], np.float32)


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """View matrix with +z up (CAD convention)."""
    f = (target - eye) / np.linalg.norm(target - eye)
    s = np.cross(f, np.array([0.0, 0.0, 1.0]))
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4, dtype=np.float32)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


class SceneRenderer:
    """A scene uploaded to the device, drawn one trace frame at a time into an offscreen target."""

    def __init__(self, ctx: GlContext, parts: list[scene.Solid], meshes: list[scene.Mesh], resolution: tuple[int, int],
                 samples: int, texture_size: int, seed: int) -> None:
        self.ctx, self.parts, self.resolution = ctx, parts, resolution
        self.prog = ctx.program(vertex_shader=VERTEX, fragment_shader=FRAGMENT)
        self.vaos, self.buffers = [], []
        for mesh in meshes:
            vbo, ibo = ctx.buffer(mesh.vertices.tobytes()), ctx.buffer(mesh.indices.tobytes())
            self.buffers += [vbo, ibo]
            self.vaos.append(ctx.vertex_array(self.prog, [(vbo, "3f 3f", "in_pos", "in_norm")], index_buffer=ibo,
                                              index_element_size=4))
        self.texture = None
        if any(p.textured for p in parts):
            self.texture = ctx.texture((texture_size, texture_size), 4,
                                       np.dstack([procedural_texture(texture_size, seed),
                                                  np.full((texture_size,) * 2, 255, np.uint8)]).tobytes())
            self.texture.build_mipmaps()
        ms = samples if samples > 1 else 0  # moderngl: 0 = single-sampled; 1 would be a 1-sample MSAA target
        self.fbo = ctx.framebuffer([ctx.renderbuffer(resolution, samples=ms)],
                                   ctx.depth_renderbuffer(resolution, samples=ms))
        self.resolve = None
        if samples > 1:
            self.resolve = ctx.simple_framebuffer(resolution, components=4)
        centre, radius = scene.bounds(parts)
        self.near, self.far = radius * 0.05, radius * 12.0
        self.models = [scene.model_matrix(p) for p in parts]
        self.triangles = [m.triangles for m in meshes]

    def _draw(self, ids: tuple[int, ...], vp: np.ndarray, frame: Frame, mode: int) -> int:
        tris = 0
        self.prog["mode"].value = mode
        for i in ids:
            part = self.parts[i]
            model = scene.model_matrix(part, frame.explode) if frame.explode else self.models[i]
            self.prog["mvp"].write((vp @ model).T.astype(np.float32).tobytes())
            self.prog["model"].write(model.T.astype(np.float32).tobytes())
            self.prog["color"].value = part.color
            self.vaos[i].render()
            tris += self.triangles[i]
        return tris

    def draw(self, frame: Frame, mode: str) -> int:
        """Issue one frame's draw calls (no wait); returns triangles submitted."""
        ctx, w, h = self.ctx, *self.resolution
        import moderngl

        self.fbo.use()
        ctx.clear(0.93, 0.94, 0.96, 1.0, depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.disable(moderngl.BLEND)
        ctx.depth_mask = True
        eye = np.asarray(frame.eye)
        vp = perspective(frame.fov_deg, w / h, self.near, self.far) @ look_at(eye, np.asarray(frame.target))
        self.prog["eye"].value = tuple(frame.eye)
        textured = mode == "textured" and self.texture is not None
        if textured:
            self.texture.use(0)
            self.prog["tex"].value = 0
        tris = self._draw(frame.opaque, vp, frame, 2 if textured else 0)
        if mode == "wire-on-shaded":  # lines over the shaded pass, lifted by polygon offset
            ctx.wireframe = True
            ctx.polygon_offset = (-1.0, -1.0)
            tris += self._draw(frame.opaque, vp, frame, 1)
            ctx.wireframe = False
            ctx.polygon_offset = (0.0, 0.0)
        if frame.transparent:
            ctx.enable(moderngl.BLEND)
            ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
            ctx.depth_mask = False  # glass must not hide what lies behind it
            tris += self._draw(frame.transparent, vp, frame, 0)
            ctx.depth_mask = True
        return tris

    def pixels(self) -> bytes:
        """The frame as tightly packed RGB rows (bottom-up, as GL reads them)."""
        src = self.fbo
        if self.resolve is not None:
            self.ctx.copy_framebuffer(self.resolve, self.fbo)
            src = self.resolve
        return src.read(components=3, alignment=1)

    def release(self) -> None:
        for obj in [*self.vaos, *self.buffers, self.texture, self.fbo, self.resolve, self.prog]:
            if obj is not None:
                obj.release()


class FrameMarker:
    """eglSwapBuffers on a 1x1 pbuffer after each frame, so apitrace sees frame boundaries.

    moderngl renders surfaceless; without a swap a recorded trace is one long
    frame and ``eglretrace`` reports 0 frames. Only used when recording.
    """

    def __init__(self) -> None:
        egl = ctypes.CDLL("libEGL.so.1")
        for name in ("eglGetCurrentDisplay", "eglGetCurrentContext", "eglCreatePbufferSurface"):
            getattr(egl, name).restype = ctypes.c_void_p
        self.egl, vp = egl, ctypes.c_void_p
        self.dpy, cur = vp(egl.eglGetCurrentDisplay()), vp(egl.eglGetCurrentContext())
        config_id, cfg, n = ctypes.c_int(), vp(), ctypes.c_int()
        egl.eglQueryContext(self.dpy, cur, 0x3028, ctypes.byref(config_id))  # EGL_CONFIG_ID
        egl.eglChooseConfig(self.dpy, (ctypes.c_int * 3)(0x3028, config_id.value, 0x3038), ctypes.byref(cfg), 1,
                            ctypes.byref(n))
        self.surface = vp(egl.eglCreatePbufferSurface(self.dpy, cfg, (ctypes.c_int * 5)(0x3057, 1, 0x3056, 1, 0x3038)))
        if not self.surface.value or not egl.eglMakeCurrent(self.dpy, self.surface, self.surface, cur):
            raise GraphicsUnavailable("cannot attach a pbuffer for frame markers (EGL config has no pbuffer bit)")

    def __call__(self) -> None:
        self.egl.eglSwapBuffers(self.dpy, self.surface)
