"""Scenes and rendering from NumPy: an in-memory box against the closed form
c(1 - e^(-sigma L)) + bg e^(-sigma L), files against arrays, a shared volume, convert,
and the errors bad input gets. No torch needed."""
import json

import pytest

np = pytest.importorskip("numpy")

import voxray  # noqa: E402



def box_grid(sigma, colour, n=4):
    g = np.zeros((n, n, n, 4), np.float32)
    g[..., 0] = sigma
    g[..., 1:] = colour
    return g


def test_box_closed_form():
    sigma, c, bg = 0.7, np.array([0.9, 0.3, 0.1]), np.array([0.2, 0.4, 1.0])
    scene = voxray.from_array(box_grid(sigma, c), background=bg)
    assert scene.shape == (4, 4, 4, 4) and scene.decoder == "rgba"
    frame = scene.render_frame(eye=(0, 0, 4), target=(0, 0, 0), up=(0, 1, 0), fov=20, size=9, stop=0,
                               backend="cpu")
    t = np.exp(-sigma * 2.0)  # the centre ray crosses the box [-1, 1] along z: L = 2
    np.testing.assert_allclose(frame.rgb[4, 4], c * (1 - t) + bg * t, rtol=0, atol=1e-4)
    np.testing.assert_allclose(frame.alpha[4, 4], 1 - t, atol=1e-4)
    assert scene.backend == "cpu"
    # A wide view: corner rays miss the box and see the background.
    img = voxray.render(scene, eye=(0, 0, 4), target=(0, 0, 0), fov=90, size=(15, 11), backend="cpu")
    assert img.shape == (11, 15, 3) and img.dtype == np.float32
    np.testing.assert_allclose(img[0, 0], bg, atol=1e-6)


def test_box_every_pixel_closed_form():
    """Off-axis rays: L from a slab intersection, pixel by pixel."""
    sigma, c, bg = 1.3, np.array([0.5, 0.8, 0.2]), np.array([1.0, 1.0, 1.0])
    eye, size, fov = np.array([0.3, 0.2, 3.0]), 21, 50.0
    with voxray.from_array(box_grid(sigma, c)) as scene:
        img = scene.render(eye=eye, target=(0.3, 0.2, 0), fov=fov, size=size, stop=0, backend="cpu")
    focal = size / 2 / np.tan(np.radians(fov) / 2)
    j, i = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5)
    d = np.stack([(j - size / 2) / focal, -(i - size / 2) / focal, -np.ones_like(j)], -1)
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = (-1 - eye) / d
        t1 = (1 - eye) / d
    tn = np.nanmax(np.minimum(t0, t1), -1)
    tf = np.nanmin(np.maximum(t0, t1), -1)
    L = np.clip(tf - np.maximum(tn, 0), 0, None)
    t = np.exp(-sigma * L)[..., None]
    ref = c * (1 - t) + bg * t
    np.testing.assert_allclose(img, ref, atol=2e-3)


def test_render_numpy_array_directly():
    g = box_grid(0.5, [1, 0, 0])
    img = voxray.render(g, size=16, backend="cpu")
    assert img.shape == (16, 16, 3) and np.isfinite(img).all()
    assert img[8, 8, 0] > img[8, 8, 1]  # red box in front of white


def test_file_scene_equals_array_scene(tmp_path):
    rng = np.random.default_rng(1)
    g = rng.random((6, 7, 8, 4), dtype=np.float32)
    np.save(tmp_path / "grid.npy", g)
    manifest = {"grid": "grid.npy", "bbox_min": [-1, -0.5, -2], "bbox_max": [1, 0.5, 2], "background": [0, 0, 0],
                "decoder": {"type": "rgba", "density_activation": "softplus", "color_activation": "sigmoid",
                            "density_scale": 3.0}}
    (tmp_path / "scene.json").write_text(json.dumps(manifest))
    kw = dict(eye=(2, 1, 5), target=(0, 0, 0), fov=35, size=(24, 20), backend="cpu")
    with voxray.load(tmp_path) as a, voxray.from_array(g, bbox_min=(-1, -0.5, -2), bbox_max=(1, 0.5, 2),
                                                       background=(0, 0, 0), decoder="rgba",
                                                       density_activation="softplus", color_activation="sigmoid",
                                                       density_scale=3.0) as b:
        assert a.shape == b.shape == (6, 7, 8, 4)
        assert a.bounds == b.bounds
        np.testing.assert_array_equal(a.grid(), g)
        np.testing.assert_array_equal(a.render(**kw), b.render(**kw))
        # the default camera is the same too
        np.testing.assert_array_equal(a.render(size=16, backend="cpu"), b.render(size=16, backend="cpu"))


def test_scalar_transfer_function_scene():
    v = np.linspace(0, 1, 5 * 5 * 5, dtype=np.float32).reshape(5, 5, 5)
    tf = [[0, 0, 0, 0, 0], [0.5, 1, 0, 0, 2], [1, 0, 0, 1, 4]]
    with voxray.from_array(v, transfer_function=tf, window=(0, 1)) as s:
        assert s.decoder == "scalar"
        f = s.render_frame(size=12, backend="cpu", depth=True)
        assert f.depth.shape == (12, 12) and np.isfinite(f.rgb).all()
        assert 0 < f.alpha.max() <= 1


def test_load_and_render_sample_volume(shared_data):
    path = shared_data / "volumes" / "FLAIR.nrrd"
    if not path.is_file():
        pytest.skip("%s is not there" % path)
    with voxray.load(path, preset="mri") as s:
        assert s.decoder == "scalar" and s.shape[3] == 1
        img = s.render(size=(40, 32), backend="cpu")
        assert img.shape == (32, 40, 3)
        assert np.isfinite(img).all() and img.std() > 0.01  # not just the background


def test_convert_then_load(tmp_path, shared_data):
    path = shared_data / "volumes" / "skull_2.9.inr"
    if not path.is_file():
        pytest.skip("%s is not there" % path)
    voxray.convert(path, tmp_path / "skull")
    assert (tmp_path / "skull" / "grid.npy").is_file() and (tmp_path / "skull" / "scene.json").is_file()
    with voxray.load(path) as a, voxray.load(tmp_path / "skull") as b:
        assert a.shape == b.shape
        # convert writes a black background and no camera (z-up is the reader's): fix both
        lo, hi = a.bounds
        kw = dict(eye=np.array(hi) * 2.5, target=(np.array(lo) + hi) / 2, up=(0, 0, 1), size=16, backend="cpu",
                  background=(0, 0, 0))
        np.testing.assert_allclose(a.render(**kw), b.render(**kw), atol=1e-5)


# ---- bad input ------------------------------------------------------------------------------

def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(voxray.VoxrayError, match="nope"):
        voxray.load(tmp_path / "nope.npy")
    (tmp_path / "bad.json").write_text('{"grid": "g.npy", "colour": 1}')
    with pytest.raises(voxray.VoxrayError, match="bad.json"):
        voxray.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"\(Z, Y, X, C\)"):
        voxray.from_array(np.zeros((4, 4), np.float32))
    with pytest.raises(TypeError, match="numeric"):
        voxray.from_array(np.array([["a"]]))
    with pytest.raises(ValueError, match="non-finite"):
        voxray.from_array(np.full((2, 2, 2, 4), np.nan, np.float32))
    with pytest.raises(ValueError, match="decoder 'rgb' is not one of"):
        voxray.from_array(np.zeros((2, 2, 2, 4), np.float32), decoder="rgb")
    with pytest.raises(voxray.VoxrayError, match="7 channels"):
        voxray.from_array(np.zeros((2, 2, 2, 7), np.float32))
    with pytest.raises(voxray.VoxrayError, match="scalar decoder needs 1 channel"):
        voxray.from_array(np.zeros((2, 2, 2, 4), np.float32), decoder="scalar")
    with pytest.raises(voxray.VoxrayError, match="bbox_max"):
        voxray.from_array(np.zeros((2, 2, 2, 4), np.float32), bbox_min=(1, 1, 1), bbox_max=(0, 2, 2))
    with pytest.raises(voxray.VoxrayError, match="at least 2 samples"):
        voxray.from_array(np.zeros((1, 2, 2, 4), np.float32))
    s = voxray.from_array(box_grid(1, [1, 1, 1]))
    with pytest.raises(ValueError, match="size"):
        s.render(size=0)
    with pytest.raises(ValueError, match="eye must be 3"):
        s.render(eye=(1, 2))
    with pytest.raises(ValueError, match="backend 'gpu' is not one of"):
        s.render(backend="gpu")
    with pytest.raises(voxray.VoxrayError, match="fov"):
        s.render(eye=(0, 0, 3), fov=200)
    with pytest.raises(TypeError, match="voxray.Scene, a path or a NumPy array"):
        voxray.render(42)
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.render()
    ok, why = voxray.cuda_available()
    assert isinstance(ok, bool) and why


@pytest.mark.skipif(not voxray.cuda_available()[0], reason="no usable CUDA device for the library: CUDA render skipped")
def test_cuda_render_matches_cpu():
    rng = np.random.default_rng(2)
    g = rng.random((16, 16, 16, 4), dtype=np.float32)
    with voxray.from_array(g) as s:
        a = s.render(size=32, backend="cpu")
        b = s.render(size=32, backend="cuda")
        assert s.backend == "cuda"
        np.testing.assert_allclose(a, b, atol=2e-3)


def test_mlp_scene_file(tmp_path):
    """A scene with the mlp decoder loads from its manifest and weights, reports 'mlp', and a
    network whose last layer is zero renders the box in sigmoid(bias)."""
    sigma, bias, bg = 0.8, np.array([-1.0, 0.5, 2.0]), np.array([1.0, 1.0, 1.0])
    g = np.zeros((4, 4, 4, 16), np.float32)
    g[..., 0] = sigma
    g[..., 1:] = np.random.default_rng().uniform(-1, 1, 15)
    np.save(tmp_path / "grid.npy", g)
    w = np.random.default_rng().uniform(-0.2, 0.2, 31 * 64 + 64 + 3 * 64 + 3).astype(np.float32)
    w[-195:-3] = 0  # W2 = 0: the colour is sigmoid(b2) whatever the features and direction
    w[-3:] = bias
    np.save(tmp_path / "mlp.npy", w)
    (tmp_path / "scene.json").write_text(json.dumps({
        "grid": "grid.npy", "bbox_min": [-1, -1, -1], "bbox_max": [1, 1, 1], "background": bg.tolist(),
        "decoder": {"type": "mlp", "layers": 1, "weights": "mlp.npy"}}))
    with voxray.load(tmp_path) as s:
        assert s.decoder == "mlp" and s.shape == (4, 4, 4, 16)
        frame = s.render_frame(eye=(0, 0, 4), target=(0, 0, 0), up=(0, 1, 0), fov=20, size=9, stop=0, backend="cpu")
        # the tensor-core flag reaches the renderer (the struct's last field) and, on the
        # CPU, changes nothing
        tc = s.render_frame(eye=(0, 0, 4), target=(0, 0, 0), up=(0, 1, 0), fov=20, size=9, stop=0, backend="cpu",
                            tensor_cores=True)
        fp = s.render_frame(eye=(0, 0, 4), target=(0, 0, 0), up=(0, 1, 0), fov=20, size=9, stop=0, backend="cpu",
                            tensor_cores=False)
        np.testing.assert_array_equal(tc.rgb, frame.rgb)
        np.testing.assert_array_equal(fp.rgb, frame.rgb)
    t = np.exp(-sigma * 2.0)
    c = 1 / (1 + np.exp(-bias))
    np.testing.assert_allclose(frame.rgb[4, 4], c * (1 - t) + bg * t, rtol=0, atol=1e-4)


def test_mlp_weights_are_torch_linear_layers(tmp_path):
    """The mlp decoder's weights file holds PyTorch nn.Linear layers in order (W0 [64][31],
    b0, W1 [64][64], b1, W2 [3][64], b2): a box of constant density and features, seen along
    -z through its centre, renders in sigmoid(net(x)) from torch.nn.Sequential built from the
    same arrays, where x is the 15 features then the degree-3 SH basis of the direction. Along
    z only the m = 0 functions are non-zero; they come from the textbook real SH here, not
    from voxray's table."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    sigma, bg = 0.7, np.array([1.0, 1.0, 1.0])
    feats = rng.uniform(-1, 1, 15).astype(np.float32)
    g = np.zeros((4, 4, 4, 16), np.float32)
    g[..., 0] = sigma
    g[..., 1:] = feats
    np.save(tmp_path / "grid.npy", g)
    shapes = [(64, 31), (64,), (64, 64), (64,), (3, 64), (3,)]
    arrays = [rng.uniform(-0.4, 0.4, s).astype(np.float32) for s in shapes]
    np.save(tmp_path / "mlp.npy", np.concatenate([a.ravel() for a in arrays]))
    (tmp_path / "scene.json").write_text(json.dumps({
        "grid": "grid.npy", "bbox_min": [-1, -1, -1], "bbox_max": [1, 1, 1], "background": bg.tolist(),
        "decoder": {"type": "mlp", "layers": 2, "weights": "mlp.npy"}}))
    net = torch.nn.Sequential(torch.nn.Linear(31, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 3))
    with torch.no_grad():
        for layer, (w, b) in zip([net[0], net[2], net[4]], zip(arrays[0::2], arrays[1::2])):
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b))
    z = -1.0  # the direction (0, 0, -1)
    sh = np.zeros(16)
    sh[0] = 0.5 / np.sqrt(np.pi)                                    # Y_0^0
    sh[2] = np.sqrt(3 / (4 * np.pi)) * z                            # Y_1^0
    sh[6] = 0.25 * np.sqrt(5 / np.pi) * (3 * z * z - 1)             # Y_2^0
    sh[12] = 0.25 * np.sqrt(7 / np.pi) * z * (5 * z * z - 3)        # Y_3^0
    x = torch.from_numpy(np.concatenate([feats, sh]).astype(np.float32))
    with torch.no_grad():
        c = torch.sigmoid(net(x)).numpy().astype(np.float64)
    with voxray.load(tmp_path) as s:
        frame = s.render_frame(eye=(0, 0, 4), target=(0, 0, 0), up=(0, 1, 0), fov=20, size=9, stop=0, backend="cpu")
    t = np.exp(-sigma * 2.0)
    np.testing.assert_allclose(frame.rgb[4, 4], c * (1 - t) + bg * t, rtol=0, atol=2e-4)
