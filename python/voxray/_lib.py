"""ctypes bindings of build/libvoxray.so (the C API of src/voxray.h).

Finds the library, declares every function's argument and result types, and turns the
C convention (0 ok, -1 with voxray_last_error()) into VoxrayError. The rest of the
package calls only what is declared here."""
import ctypes
import os
from pathlib import Path

API_VERSION = 1  # VOXRAY_API_VERSION this package was written against


class VoxrayError(RuntimeError):
    """A failure reported by the voxray library (bad file, bad scene, CUDA error...)."""


def _candidates():
    env = os.environ.get("VOXRAY_LIB")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here / "libvoxray.so"                           # pip install ./python
    yield here.parent.parent / "build" / "libvoxray.so"   # a checkout: python/voxray -> build/


def _find():
    tried = []
    for p in _candidates():
        tried.append(str(p))
        if p.is_file():
            return p
    raise ImportError("voxray: libvoxray.so not found (looked at %s); run `make lib` in the "
                      "repository, or `pip install ./python`, or set VOXRAY_LIB" % ", ".join(tried))


# ---- C structs (field for field as in src/voxray.h) ----------------------------------------
_d3 = ctypes.c_double * 3
_f3 = ctypes.c_float * 3


class LoadDesc(ctypes.Structure):
    _fields_ = [("raw", ctypes.c_char_p), ("spacing", _d3), ("volume", ctypes.c_int),
                ("preset", ctypes.c_char_p)]


class SceneDesc(ctypes.Structure):
    _fields_ = [("bbox_min", _d3), ("bbox_max", _d3), ("align_corners", ctypes.c_int),
                ("decoder", ctypes.c_int), ("density_activation", ctypes.c_int),
                ("color_activation", ctypes.c_int), ("density_scale", ctypes.c_float),
                ("sh_degree", ctypes.c_int), ("preset", ctypes.c_char_p),
                ("window", ctypes.c_float * 2), ("tf_n", ctypes.c_int),
                ("tf", ctypes.POINTER(ctypes.c_float)), ("background", _f3),
                ("step", ctypes.c_float), ("name", ctypes.c_char_p)]


class SceneInfo(ctypes.Structure):
    _fields_ = [("nx", ctypes.c_int), ("ny", ctypes.c_int), ("nz", ctypes.c_int), ("nc", ctypes.c_int),
                ("decoder", ctypes.c_int), ("sh_degree", ctypes.c_int),
                ("world_min", _d3), ("world_max", _d3), ("eye", _d3), ("target", _d3), ("up", _d3),
                ("fov", ctypes.c_double), ("background", _f3), ("step", ctypes.c_float),
                ("name", ctypes.c_char * 256)]


class RenderDesc(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("has_camera", ctypes.c_int),
                ("eye", _d3), ("target", _d3), ("up", _d3), ("fov", ctypes.c_double),
                ("backend", ctypes.c_int), ("step", ctypes.c_float), ("stop", ctypes.c_float),
                ("has_background", ctypes.c_int), ("background", _f3), ("half", ctypes.c_int),
                ("threads", ctypes.c_int), ("no_skip", ctypes.c_int), ("mlp_tensor_cores", ctypes.c_int)]


class GridDesc(ctypes.Structure):
    _fields_ = [("nx", ctypes.c_int), ("ny", ctypes.c_int), ("nz", ctypes.c_int), ("nc", ctypes.c_int),
                ("world_to_index", ctypes.c_float * 12)]


# constants of src/voxray.h
DECODERS = {"rgba": 0, "sh": 1, "scalar": 2}  # what a scene built from arrays may use
DECODER_NAMES = {0: "rgba", 1: "sh", 2: "scalar", 3: "mlp"}  # what a loaded scene may report
DENSITY_ACTIVATIONS = {"relu": 0, "softplus": 1, "exp": 2, "none": 3}
COLOR_ACTIVATIONS = {"clamp": 0, "sigmoid": 1, "plenoxels": 2}
BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2}
HOST, CUDA = 0, 1
F32, F64, F16 = 0, 1, 2

_P = ctypes.c_void_p
_I, _LL = ctypes.c_int, ctypes.c_longlong

_SIGNATURES = {
    "voxray_api_version": (_I, []),
    "voxray_version": (ctypes.c_char_p, []),
    "voxray_last_error": (ctypes.c_char_p, []),
    "voxray_cuda_available": (_I, [ctypes.c_char_p, ctypes.c_size_t]),
    "voxray_scene_load": (_I, [ctypes.c_char_p, ctypes.POINTER(LoadDesc), ctypes.POINTER(_P)]),
    "voxray_scene_desc_default": (None, [ctypes.POINTER(SceneDesc)]),
    "voxray_scene_from_array": (_I, [_P, _I, _I, _I, _I, ctypes.POINTER(SceneDesc), ctypes.POINTER(_P)]),
    "voxray_scene_free": (None, [_P]),
    "voxray_scene_get_info": (_I, [_P, ctypes.POINTER(SceneInfo)]),
    "voxray_scene_grid": (ctypes.POINTER(ctypes.c_float), [_P]),
    "voxray_render_desc_default": (None, [ctypes.POINTER(RenderDesc)]),
    "voxray_render": (_I, [_P, ctypes.POINTER(RenderDesc), _P, _P, _P]),
    "voxray_render_backend": (ctypes.c_char_p, [_P]),
    "voxray_convert": (_I, [_I, ctypes.POINTER(ctypes.c_char_p)]),
    "voxray_trilinear_forward": (_I, [_I, _I, _P, _P, _P, _LL, _I, _P]),
    "voxray_trilinear_backward": (_I, [_I, _I, _P, _P, _P, _LL, _I, _P]),
    "voxray_grid_desc_unit": (_I, [ctypes.POINTER(GridDesc), _I, _I, _I, _I]),
    "voxray_grid_gather": (_I, [_I, _I, ctypes.POINTER(GridDesc), _P, _P, _LL, _P, _P]),
    "voxray_grid_scatter": (_I, [_I, _I, ctypes.POINTER(GridDesc), _P, _P, _LL, _P, _P]),
}


def _load():
    path = _find()
    lib = ctypes.CDLL(str(path))
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    got = lib.voxray_api_version()
    if got != API_VERSION:
        raise ImportError("voxray: %s has C API version %d, this package needs %d; rebuild it "
                          "(`make lib`)" % (path, got, API_VERSION))
    return lib, path


lib, path = _load()


def last_error():
    msg = lib.voxray_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(rc, what):
    """Raise VoxrayError with the library's message when a call returned non-zero."""
    if rc != 0:
        raise VoxrayError(last_error() or "%s failed" % what)
