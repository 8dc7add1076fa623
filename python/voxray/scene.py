"""Scenes and rendering from NumPy: voxray.load, voxray.from_array, voxray.render.

A Scene wraps the C library's scene handle (a grid + decoder + placement + camera);
render() marches rays through it on the CPU or CUDA backend and returns float32 images.
Nothing here needs PyTorch."""
import ctypes
import os
import threading
from collections import namedtuple

import numpy as np

from . import _lib
from ._lib import VoxrayError

_DECODER_NAMES = _lib.DECODER_NAMES

Frame = namedtuple("Frame", ["rgb", "alpha", "depth"])
Frame.__doc__ = """One rendered frame: rgb (H, W, 3) float32 with the background composited,
alpha (H, W) float32 opacity, depth (H, W) float32 expected depth or None."""


def _vec3(name, v):
    try:
        a = np.asarray(v, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError("voxray: %s must be 3 numbers, got %r" % (name, v)) from None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError("voxray: %s must be 3 finite numbers, got %r" % (name, v))
    return a


def _size(size):
    if isinstance(size, (int, np.integer)):
        w = h = int(size)
    else:
        try:
            w, h = (int(x) for x in size)
        except (TypeError, ValueError):
            raise TypeError("voxray: size must be an int or (width, height), got %r" % (size,)) from None
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        raise ValueError("voxray: size %dx%d is outside 1..16384" % (w, h))
    return w, h


def _pick(name, value, table):
    if value not in table:
        raise ValueError("voxray: %s %r is not one of %s" % (name, value, ", ".join(table)))
    return table[value]


class Scene:
    """A scene held by the voxray library: grid (Z, Y, X, C), decoder, placement, camera.

    Make one with voxray.load(path) or voxray.from_array(grid); render it with
    scene.render(...) or voxray.render(scene, ...). Free it with close() (or a with block);
    it is also freed when garbage-collected."""

    def __init__(self, handle):
        self._h = ctypes.c_void_p(handle)
        self._lock = threading.Lock()  # the C scene keeps one renderer: one frame at a time
        info = _lib.SceneInfo()
        _lib.check(_lib.lib.voxray_scene_get_info(self._h, ctypes.byref(info)), "scene info")
        self._info = info

    def close(self):
        """Free the scene (and its prepared renderer, GPU memory included)."""
        if getattr(self, "_h", None) and self._h.value:
            with self._lock:
                _lib.lib.voxray_scene_free(self._h)
                self._h = ctypes.c_void_p(None)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h.value:
            raise ValueError("voxray: this scene was closed")
        return self._h

    @property
    def shape(self):
        """Grid shape (Z, Y, X, C)."""
        i = self._info
        return (i.nz, i.ny, i.nx, i.nc)

    @property
    def decoder(self):
        """'rgba', 'sh', 'scalar' or 'mlp'."""
        return _DECODER_NAMES.get(self._info.decoder, "?")

    @property
    def bounds(self):
        """World-space bounds of the grid's box: (min xyz, max xyz)."""
        return tuple(self._info.world_min), tuple(self._info.world_max)

    @property
    def camera(self):
        """The scene's camera (its manifest's, or the default): eye, target, up, fov."""
        i = self._info
        return {"eye": tuple(i.eye), "target": tuple(i.target), "up": tuple(i.up), "fov": i.fov}

    @property
    def name(self):
        return self._info.name.decode("utf-8", "replace")

    @property
    def background(self):
        return tuple(self._info.background)

    def grid(self):
        """A copy of the grid as a float32 NumPy array (Z, Y, X, C)."""
        p = _lib.lib.voxray_scene_grid(self._handle())
        if not p:
            raise _lib.VoxrayError(_lib.last_error())
        n = int(np.prod(self.shape))
        return np.ctypeslib.as_array(p, shape=(n,)).reshape(self.shape).copy()

    def __repr__(self):
        return "<voxray.Scene %r %s %s>" % (self.name, "x".join(map(str, self.shape)), self.decoder)

    def render_frame(self, eye=None, target=None, up=None, fov=None, size=256, backend="auto",
                     step=None, stop=None, background=None, half=False, threads=0, skip=True,
                     depth=False, tensor_cores=None):
        """Render one frame and return a Frame (rgb, alpha, depth); see render()."""
        d = _lib.RenderDesc()
        _lib.lib.voxray_render_desc_default(ctypes.byref(d))
        d.width, d.height = _size(size)
        cam = self.camera
        if eye is not None or target is not None or up is not None or fov is not None:
            d.has_camera = 1
            d.eye[:] = _vec3("eye", cam["eye"] if eye is None else eye)
            d.target[:] = _vec3("target", cam["target"] if target is None else target)
            d.up[:] = _vec3("up", cam["up"] if up is None else up)
            d.fov = float(cam["fov"] if fov is None else fov)
        d.backend = _pick("backend", backend, _lib.BACKENDS)
        if step is not None:
            if not step > 0:
                raise ValueError("voxray: step must be positive, got %r" % (step,))
            d.step = float(step)
        if stop is not None:
            if not 0 <= stop < 1:
                raise ValueError("voxray: stop must be in [0, 1), got %r" % (stop,))
            d.stop = float(stop)
        if background is not None:
            d.has_background = 1
            d.background[:] = _vec3("background", background)
        d.half = int(bool(half))
        d.threads = int(threads)
        d.no_skip = int(not skip)
        d.mlp_tensor_cores = 0 if tensor_cores is None else 1 if tensor_cores else -1
        w, h = d.width, d.height
        rgb = np.empty((h, w, 3), np.float32)
        alpha = np.empty((h, w), np.float32)
        dep = np.empty((h, w), np.float32) if depth else None
        with self._lock:
            rc = _lib.lib.voxray_render(self._handle(), ctypes.byref(d), rgb.ctypes.data, alpha.ctypes.data,
                                        dep.ctypes.data if dep is not None else None)
        _lib.check(rc, "render")
        return Frame(rgb, alpha, dep)

    def render(self, **kw):
        """Render one frame; returns rgb (H, W, 3) float32. Arguments as voxray.render()."""
        return self.render_frame(**kw).rgb

    @property
    def backend(self):
        """Backend of the last render ('cpu' or 'cuda'; '' before the first)."""
        return _lib.lib.voxray_render_backend(self._handle()).decode()


def load(path, raw=None, spacing=None, volume=0, preset=None):
    """Open a scene: a scene.json manifest or its directory, a .npy grid, or a volume file
    (NRRD, NIfTI, MetaImage, INRIMAGE, VolPack, raw with raw="X,Y,Z,dtype[,endian]",
    Plenoxels checkpoints; docs/FORMATS.md). preset names a transfer function for scalar
    volumes. Raises VoxrayError naming the file and the problem."""
    path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise TypeError("voxray.load: path must be a non-empty path, got %r" % (path,))
    d = _lib.LoadDesc()
    d.raw = raw.encode() if raw else None
    if spacing is not None:
        d.spacing[:] = _vec3("spacing", spacing)
    d.volume = int(volume)
    d.preset = preset.encode() if preset else None
    h = ctypes.c_void_p()
    _lib.check(_lib.lib.voxray_scene_load(path.encode(), ctypes.byref(d), ctypes.byref(h)), "load")
    return Scene(h.value)


def from_array(grid, bbox_min=(-1, -1, -1), bbox_max=(1, 1, 1), align_corners=True, decoder=None,
               density_activation=None, color_activation=None, density_scale=1.0, sh_degree=None,
               preset=None, window=None, transfer_function=None, background=(1, 1, 1), step=0.5,
               name="array"):
    """A scene from a grid in memory, no file needed.

    grid: array (Z, Y, X, C) (or (Z, Y, X) for one channel), converted to float32, finite.
    The other arguments mean what the scene.json fields of the same names mean
    (docs/FORMAT.md): the world box [bbox_min, bbox_max] (x, y, z) and align_corners
    place the lattice; decoder is 'rgba' (density, r, g, b), 'sh' (density + SH
    coefficients) or 'scalar' (a transfer function over a value window), chosen from the
    channel count when None (1 scalar, 4 rgba, 13/28/49 sh); density_activation 'relu',
    'softplus', 'exp', 'none'; color_activation 'clamp', 'sigmoid', 'plenoxels';
    transfer_function rows [v, r, g, b, sigma]. step is the sample spacing in voxels."""
    a = np.asarray(grid)
    if a.dtype.kind not in "fiub":
        raise TypeError("voxray.from_array: grid must be a numeric array, got dtype %s" % a.dtype)
    if a.ndim == 3:
        a = a[..., None]
    if a.ndim != 4:
        raise ValueError("voxray.from_array: grid must be (Z, Y, X, C) or (Z, Y, X), got shape %s" % (a.shape,))
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("voxray.from_array: grid holds non-finite values")
    nz, ny, nx, nc = a.shape
    d = _lib.SceneDesc()
    _lib.lib.voxray_scene_desc_default(ctypes.byref(d))
    d.bbox_min[:] = _vec3("bbox_min", bbox_min)
    d.bbox_max[:] = _vec3("bbox_max", bbox_max)
    d.align_corners = int(bool(align_corners))
    if decoder is not None:
        d.decoder = _pick("decoder", decoder, _lib.DECODERS)
    if density_activation is not None:
        d.density_activation = _pick("density_activation", density_activation, _lib.DENSITY_ACTIVATIONS)
    if color_activation is not None:
        d.color_activation = _pick("color_activation", color_activation, _lib.COLOR_ACTIVATIONS)
    d.density_scale = float(density_scale)
    if sh_degree is not None:
        d.sh_degree = int(sh_degree)
    keep = []  # buffers the C call reads
    if preset is not None:
        keep.append(preset.encode())
        d.preset = keep[-1]
    if window is not None:
        lo, hi = (float(x) for x in window)
        if not hi > lo:
            raise ValueError("voxray.from_array: window needs lo < hi, got %r" % (window,))
        d.window[:] = (lo, hi)
    if transfer_function is not None:
        tf = np.ascontiguousarray(transfer_function, dtype=np.float32)
        if tf.ndim != 2 or tf.shape[1] != 5:
            raise ValueError("voxray.from_array: transfer_function must be rows [v, r, g, b, sigma], got shape %s"
                             % (tf.shape,))
        keep.append(tf)
        d.tf_n = tf.shape[0]
        d.tf = tf.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    d.background[:] = _vec3("background", background)
    d.step = float(step)
    keep.append(str(name).encode())
    d.name = keep[-1]
    h = ctypes.c_void_p()
    rc = _lib.lib.voxray_scene_from_array(a.ctypes.data, nz, ny, nx, nc, ctypes.byref(d), ctypes.byref(h))
    _lib.check(rc, "from_array")
    return Scene(h.value)


def render(scene, eye=None, target=None, up=None, fov=None, size=256, backend="auto", step=None, stop=None,
           background=None, half=False, threads=0, skip=True, tensor_cores=None):
    """Render a scene to an RGB image: a float32 NumPy array (height, width, 3) in [0, 1],
    rows top to bottom, the background composited.

    scene: a Scene, a path (opened with load()), or a NumPy grid (wrapped with
    from_array() and its defaults). Camera: eye and target (world x, y, z), up, fov
    (horizontal, degrees); any left out come from the scene's camera (its manifest's or
    the default three-quarter view). size: int or (width, height). backend: 'auto',
    'cpu' or 'cuda'. step: sample spacing in voxels (default: the scene's); stop: early
    termination threshold on transmittance (0 = off); background: RGB override; half:
    float16 grid storage on CUDA; threads: CPU threads (0 = all); skip: empty-space
    skipping; tensor_cores: on CUDA, an mlp scene's network on the tensor cores (TF32):
    None (default) where the GPU has them (sm_80 and up), True always (an error without
    them), False never (FP32). For opacity and depth use Scene.render_frame()."""
    kw = dict(eye=eye, target=target, up=up, fov=fov, size=size, backend=backend, step=step, stop=stop,
              background=background, half=half, threads=threads, skip=skip, tensor_cores=tensor_cores)
    if isinstance(scene, Scene):
        return scene.render(**kw)
    if isinstance(scene, (str, os.PathLike)):
        with load(scene) as s:
            return s.render(**kw)
    if isinstance(scene, np.ndarray):
        with from_array(scene) as s:
            return s.render(**kw)
    raise TypeError("voxray.render: scene must be a voxray.Scene, a path or a NumPy array, got %s"
                    % type(scene).__name__)


def convert(src, outdir, raw=None, spacing=None, volume=None, preset=None, half=False):
    """`voxray convert`: open any volume voxray reads and write outdir/grid.npy and
    outdir/scene.json. Raises VoxrayError on failure (the message is also on stderr)."""
    argv = ["convert", os.fspath(src), os.fspath(outdir)]
    if raw:
        argv += ["--raw", raw]
    if spacing is not None:
        argv += ["--spacing", ",".join("%.17g" % x for x in _vec3("spacing", spacing))]
    if volume is not None:
        argv += ["--volume", str(int(volume))]
    if preset:
        argv += ["--preset", preset]
    if half:
        argv += ["--half"]
    arr = (ctypes.c_char_p * len(argv))(*[s.encode() for s in argv])
    rc = _lib.lib.voxray_convert(len(argv), arr)
    if rc != 0:
        raise VoxrayError(_lib.last_error() or "voxray convert %s %s failed (exit %d)" % (src, outdir, rc))


def cuda_available():
    """(True, device name) when the library has CUDA and a device is usable, else (False, why)."""
    buf = ctypes.create_string_buffer(256)
    ok = _lib.lib.voxray_cuda_available(buf, 256)
    return bool(ok), buf.value.decode("utf-8", "replace")
