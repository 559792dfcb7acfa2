"""flow.mock_torch: `import torch` resolves to oneflow_lite while enabled, to PyTorch (or nothing) after."""

import subprocess
import sys
import textwrap

import pytest

import oneflow_lite as flow


@pytest.fixture
def mocked():
    with flow.mock_torch.enable():
        yield
    assert not flow.mock_torch.is_enabled()


def test_torch_and_its_submodules_are_oneflow_lite(mocked):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    assert torch.Tensor is flow.Tensor and nn.Linear is flow.nn.Linear and F.relu is flow.nn.functional.relu
    assert DataLoader is flow.utils.data.DataLoader
    assert torch.nn.functional is F and torch.optim.lr_scheduler.StepLR is flow.optim.lr_scheduler.StepLR
    x = torch.tensor([1.0, -2.0])
    assert isinstance(x, torch.Tensor) and F.relu(x).tolist() == [1.0, 0.0]
    assert torch.__version__.startswith(flow.mock_torch.TORCH_API_VERSION + "+")


def test_missing_names_say_they_are_not_provided(mocked):
    import torch

    with pytest.raises(AttributeError, match="module 'torch' has no attribute 'no_such_fn': torch.no_such_fn is not "
                                             "provided by oneflow_lite"):
        torch.no_such_fn
    assert not hasattr(torch.nn, "NoSuchLayer")
    with pytest.raises(ModuleNotFoundError, match="No module named 'torch.no_such_mod': torch.no_such_mod is not "
                                                  "provided by oneflow_lite"):
        import torch.no_such_mod  # noqa: F401


def test_writes_reach_the_real_module_and_imports_do_not_corrupt_it(mocked):
    import torch
    import torch.backends.cudnn

    torch.backends.cudnn.benchmark = True
    try:
        assert flow.backends.cudnn.benchmark is True
    finally:
        flow.backends.cudnn.benchmark = False
    assert flow.nn.__name__ == "oneflow_lite.nn"  # `import torch.nn` set torch.nn on the proxy, not on flow


def test_disable_restores_real_torch_modules():
    real = sys.modules.get("torch")
    with flow.mock_torch.enable():
        import torch
        assert torch.Tensor is flow.Tensor
    assert sys.modules.get("torch") is real


def test_the_environment_plumbing_real_scripts_touch(mocked):
    import torch
    from torch.distributed import destroy_process_group, init_process_group
    from torch.nn.parallel import DistributedDataParallel as DDP
    import torch.onnx  # noqa: F401

    assert not torch.cuda.is_available() and torch.cuda.device_count() == 0 and not torch.cuda.is_bf16_supported()
    assert not torch.accelerator.is_available()
    torch.cuda.manual_seed_all(3)
    a = torch.rand(3)
    torch.manual_seed(3)
    assert torch.rand(3).tolist() == a.tolist()  # the cuda seeding functions seed the CPU generator
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    assert not scaler.is_enabled() and scaler.scale(a) is a
    init_process_group(backend="gloo")
    try:
        model = DDP(torch.nn.Linear(2, 3))
        assert list(model.state_dict()) == ["module.weight", "module.bias"]
        assert torch.distributed.get_rank() == 0 and torch.distributed.get_world_size() == 1
    finally:
        destroy_process_group()
    assert torch.compile(model) is model


def test_torch_jit_entry_points_run_eagerly_and_save_whole_modules(tmp_path):
    """Note [No TorchScript]: script / trace give back what they were given (trace after one call), the decorators
    leave functions alone, jit.save / jit.load round-trip the module."""
    with flow.mock_torch.enable():
        import torch

        @torch.jit.script
        def double(x):
            return x * 2

        model = torch.nn.Linear(2, 1)
        with torch.no_grad():
            model.weight.copy_(torch.tensor([[1.0, 2.0]]))
            model.bias.fill_(0.5)
        calls = []
        handle = model.register_forward_hook(lambda m, i, o: calls.append(tuple(i[0].shape)))
        traced = torch.jit.trace(model, torch.ones(3, 2))
        assert traced is model and calls == [(3, 2)]  # the example inputs ran once
        handle.remove()
        assert torch.jit.script(model) is model and double(torch.tensor([1.5])).tolist() == [3.0]
        assert torch.jit.ignore(double) is double and torch.jit.ignore(drop=True)(double) is double
        assert not torch.jit.is_scripting() and not torch.jit.is_tracing() and torch.jit.annotate(int, 3) == 3
        torch.jit.save(traced, tmp_path / "m.pt")
        back = torch.jit.load(tmp_path / "m.pt")
        assert type(back) is type(model) and back(torch.tensor([[1.0, 1.0]])).tolist() == [[3.5]]
        with pytest.raises(RuntimeError, match="example_inputs .* are required"):
            torch.jit.trace(model)


def test_torch_special_names_the_functional_api():
    import math

    with flow.mock_torch.enable():
        import torch
        x = torch.tensor([0.5, 2.0])
        assert torch.special.expit(x).tolist() == pytest.approx([1 / (1 + math.exp(-0.5)), 1 / (1 + math.exp(-2))])
        assert torch.special.gammaln(x).tolist() == pytest.approx([math.lgamma(0.5), math.lgamma(2.0)])
        assert torch.special.logit(torch.tensor([0.25])).item() == pytest.approx(math.log(1 / 3))
        assert torch.special.xlogy(torch.tensor([0.0, 2.0]), torch.tensor([0.0, 3.0])).tolist() == pytest.approx(
            [0.0, 2 * math.log(3)])
        assert "expit" in dir(torch.special)
        with pytest.raises(AttributeError, match="torch.special.ndtr is not provided by oneflow_lite"):
            torch.special.ndtr(x)


def _write_rank(rank, directory):
    (directory / f"rank{rank}").write_text(str(rank * 10))


def _fail_on_rank_one(rank):
    if rank == 1:
        raise SystemExit(3)


def test_torch_multiprocessing_spawn_and_sharing_strategy(tmp_path):
    with flow.mock_torch.enable():
        import torch.multiprocessing as mp
        assert mp.get_sharing_strategy() == "file_descriptor" and mp.get_all_sharing_strategies() == {
            "file_descriptor", "file_system"}
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        mp.set_sharing_strategy("file_descriptor")
        mp.spawn(_write_rank, args=(tmp_path,), nprocs=2, start_method="fork")
        assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["0", "10"]
        with pytest.raises(mp.ProcessRaisedException, match="process 1 terminated with exit code 3"):
            mp.spawn(_fail_on_rank_one, nprocs=2, start_method="fork")
        assert mp.Queue is not None and callable(mp.set_start_method)  # Python's multiprocessing, re-exported


def test_torch_testing_assert_close_tolerances_and_report():
    with flow.mock_torch.enable():
        import torch
        torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-6]))  # within float32's
        with pytest.raises(AssertionError, match=r"(?s)Tensor-likes are not close!.*Mismatched elements: 1 / 2 "
                                                 r"\(50.0%\).*Greatest absolute difference: 0.0999\d* at index "
                                                 r"\(1,\) \(up to 1e-05 allowed\)"):
            torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))
        with pytest.raises(AssertionError, match=r"(?s)Tensor-likes are not equal!.*difference: 1 at index \(1,\)"):
            torch.testing.assert_close(torch.tensor([1, 2]), torch.tensor([1, 3]))  # integers: exact
        with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match"):
            torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))
        torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), check_dtype=False)
        torch.testing.assert_close(torch.tensor([float("nan")]), torch.tensor([float("nan")]), equal_nan=True)
        torch.testing.assert_close([torch.ones(2), {"a": 1.5}], [torch.ones(2), {"a": 1.5}])
        torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([1.05]), rtol=0.1, atol=0.0)
        with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted"):
            torch.testing.assert_close(torch.ones(1), torch.ones(1), rtol=0.1)
        with pytest.raises(AssertionError, match="custom"):
            torch.testing.assert_close(torch.ones(1), torch.zeros(1), msg="custom")


def test_run_command_runs_an_unmodified_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(16, 3), torch.randn(16, 1)
        for _ in range(20):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        print(type(torch.tensor(1.0)).__module__, sys.argv[1:], f"{loss.item():.4f}", sep="|")
    """))
    r = subprocess.run([sys.executable, "-m", "oneflow_lite.mock_torch", "run", str(script), "--lr", "3"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    module, args, loss = r.stdout.strip().split("|")
    assert module == "oneflow_lite.framework.tensor" and args == "['--lr', '3']"
    assert 0.0 < float(loss) < 2.0


def test_a_torch_module_imported_under_the_mock_stays_oneflow_lite_after_disable():
    with flow.mock_torch.enable():
        import torch
    assert torch.nn.Linear is flow.nn.Linear and torch.optim.SGD is flow.optim.SGD  # submodules, after disable
    with flow.mock_torch.enable():
        import torch as again
    assert again is torch  # one proxy per module


def test_torch_autograd_profiler_legacy_api():
    with flow.mock_torch.enable():
        import torch
        with torch.autograd.profiler.profile(record_shapes=True) as prof:
            with torch.autograd.profiler.record_function("block"):
                (torch.ones(2) * 2).sum()
        names = [e.key for e in prof.key_averages()]
        assert "block" in names and "scalar_mul" in names
        with torch.autograd.profiler.profile(enabled=False) as off:
            torch.ones(1) + 1
        assert off.enabled is False
