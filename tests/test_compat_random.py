"""[compat] Random draws: ``multinomial``, ``bernoulli`` / ``bernoulli_``, ``poisson``, the in-place
distributions (``exponential_``, ``geometric_``, ``log_normal_``, ``cauchy_``, ``random_``), ``randint_like``;
generators, ``manual_seed``, rng state and graph capture. Statistics are checked against the distributions'
formulas with tolerances of several standard errors."""

import math

import numpy as np
import pytest

import oneflow_lite as flow

N = 40_000


def _close(sample_stat, expected, stderr, k=6.0):
    assert abs(sample_stat - expected) <= k * stderr, (sample_stat, expected, stderr)


# ---- multinomial ------------------------------------------------------------------------------------------
def test_multinomial_with_replacement_follows_the_probabilities():
    flow.manual_seed(0)
    p = np.array([0.1, 0.0, 0.6, 0.3])
    draws = flow.multinomial(flow.tensor(p * 5), N, replacement=True)  # unnormalised weights
    assert draws.dtype is flow.int64 and tuple(draws.shape) == (N,)
    counts = np.bincount(draws.numpy(), minlength=4) / N
    assert counts[1] == 0  # a zero-probability category is never drawn
    for i in (0, 2, 3):
        _close(counts[i], p[i], math.sqrt(p[i] * (1 - p[i]) / N))


def test_multinomial_without_replacement_draws_distinct_categories():
    flow.manual_seed(1)
    rows = flow.tensor([[1.0, 2.0, 3.0, 4.0, 0.5], [5.0, 0.0, 1.0, 1.0, 1.0]])
    out = flow.multinomial(rows, 3)
    assert tuple(out.shape) == (2, 3)
    for row in out.numpy():
        assert len(set(row.tolist())) == 3
    assert 1 not in out.numpy()[1]  # zero probability, and enough other categories
    everything = flow.multinomial(flow.tensor([0.2, 0.3, 0.5]), 3).numpy()
    assert sorted(everything.tolist()) == [0, 1, 2]


def test_multinomial_without_replacement_first_draw_follows_the_probabilities():
    flow.manual_seed(2)
    p = np.array([0.5, 0.3, 0.2])
    firsts = flow.multinomial(flow.tensor(np.tile(p, (N, 1))), 2).numpy()[:, 0]
    counts = np.bincount(firsts, minlength=3) / N
    for i in range(3):
        _close(counts[i], p[i], math.sqrt(p[i] * (1 - p[i]) / N))
    # P(second = 2 | first = 0) = 0.2 / 0.5 (drawn without replacement)
    seconds = flow.multinomial(flow.tensor(np.tile(p, (N, 1))), 2).numpy()
    given = seconds[seconds[:, 0] == 0, 1]
    _close(np.mean(given == 2), 0.4, math.sqrt(0.24 / len(given)))


def test_multinomial_method_generator_and_seed_reproduce():
    p = flow.tensor([0.25, 0.25, 0.5])
    g = flow.Generator().manual_seed(11)
    a = p.multinomial(10, True, generator=g)
    g.manual_seed(11)
    b = flow.multinomial(p, 10, replacement=True, generator=g)
    assert a.tolist() == b.tolist()
    flow.manual_seed(5)
    c = flow.multinomial(p, 10, True)
    flow.manual_seed(5)
    assert flow.multinomial(p, 10, True).tolist() == c.tolist()


@pytest.mark.parametrize("probs, n, replacement, match", [
    ([0.5, -0.1, 0.6], 1, True, r"contains either `inf`, `nan` or element < 0"),
    ([0.5, float("nan")], 1, True, r"contains either `inf`, `nan` or element < 0"),
    ([1.0, float("inf")], 1, True, r"contains either `inf`, `nan` or element < 0"),
    ([[1.0, 1.0], [0.0, 0.0]], 1, True, r"sum of probabilities <= 0"),
    ([0.5, 0.5], 3, False, r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
    ([0.5, 0.5], 0, True, r"cannot sample n_sample <= 0 samples"),
    ([[[0.5, 0.5]]], 1, True, r"prob_dist must be 1 or 2 dim"),
    ([], 1, True, r"number of categories cannot be zero"),
])
def test_multinomial_errors(probs, n, replacement, match):
    with pytest.raises(RuntimeError, match=match):
        flow.multinomial(flow.tensor(probs), n, replacement)


def test_multinomial_of_integers_is_refused():
    with pytest.raises(RuntimeError, match="multinomial: expected a floating point probability tensor, got int64"):
        flow.multinomial(flow.tensor([1, 2]), 1)


def test_multinomial_on_meta_infers_the_shape():
    out = flow.multinomial(flow.ones(4, 6, device="meta"), 5, True)
    assert out.is_meta and tuple(out.shape) == (4, 5) and out.dtype is flow.int64


# ---- bernoulli, poisson ---------------------------------------------------------------------------------------
def test_bernoulli_of_probabilities():
    flow.manual_seed(3)
    p = np.array([0.0, 0.2, 0.7, 1.0])
    draws = flow.bernoulli(flow.tensor(np.tile(p, (N, 1)), dtype=flow.float64))
    assert draws.dtype is flow.float64 and set(np.unique(draws.numpy())) <= {0.0, 1.0}
    means = draws.numpy().mean(axis=0)
    assert means[0] == 0 and means[3] == 1
    for i in (1, 2):
        _close(means[i], p[i], math.sqrt(p[i] * (1 - p[i]) / N))
    assert not draws.requires_grad


def test_bernoulli_with_a_scalar_p_and_in_place():
    flow.manual_seed(4)
    x = flow.zeros(N, dtype=flow.int64)
    out = flow.bernoulli(x, 0.3)
    assert out.dtype is flow.int64 and tuple(out.shape) == (N,)
    _close(out.numpy().mean(), 0.3, math.sqrt(0.21 / N))
    y = flow.zeros(N)
    assert y.bernoulli_(0.8) is y
    _close(y.numpy().mean(), 0.8, math.sqrt(0.16 / N))
    z = flow.zeros(2, 3)
    z.bernoulli_(flow.tensor([0.0, 1.0, 1.0]))  # broadcast tensor p
    assert z.tolist() == [[0.0, 1.0, 1.0]] * 2
    b = flow.zeros(4, dtype=flow.bool).bernoulli_(1.0)
    assert b.tolist() == [True] * 4


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match="expected all probabilities p to satisfy 0 <= p <= 1"):
        flow.bernoulli(flow.tensor([1.5]))
    with pytest.raises(RuntimeError, match=r"expected 0 <= p <= 1, but got p=1.5"):
        flow.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="expected a floating point tensor of probabilities"):
        flow.bernoulli(flow.tensor([1]))
    with pytest.raises(TypeError, match="argument 'p' must be float or Tensor"):
        flow.zeros(2).bernoulli_("half")


def test_poisson_mean_and_variance():
    flow.manual_seed(5)
    rates = flow.full((N,), 3.5, dtype=flow.float64)
    draws = flow.poisson(rates).numpy()
    assert draws.dtype == np.float64 and np.all(draws == np.round(draws)) and draws.min() >= 0
    _close(draws.mean(), 3.5, math.sqrt(3.5 / N))
    _close(draws.var(), 3.5, 3.5 * math.sqrt(2 / N) * 2)
    assert flow.poisson(flow.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="expected rate to be non-negative"):
        flow.poisson(flow.tensor([-1.0]))
    with pytest.raises(RuntimeError, match="expected a floating point tensor of rates"):
        flow.poisson(flow.tensor([1]))


# ---- in-place distributions ------------------------------------------------------------------------------------
def test_exponential_():
    flow.manual_seed(6)
    x = flow.empty(N, dtype=flow.float64)
    assert x.exponential_(2.0) is x
    a = x.numpy()
    assert a.min() >= 0
    _close(a.mean(), 0.5, 0.5 / math.sqrt(N))
    _close(np.median(a), math.log(2) / 2, 0.02)
    with pytest.raises(RuntimeError, match=r"exponential_ expects lambd > 0.0, but found lambd=-1.0"):
        flow.zeros(2).exponential_(-1)
    with pytest.raises(RuntimeError, match="expected a floating point dtype"):
        flow.zeros(2, dtype=flow.int64).exponential_()


def test_geometric_():
    flow.manual_seed(7)
    x = flow.zeros(N, dtype=flow.int64).geometric_(0.25)
    a = x.numpy()
    assert x.dtype is flow.int64 and a.min() >= 1
    _close(a.mean(), 4.0, math.sqrt(0.75) / 0.25 / math.sqrt(N))
    _close(np.mean(a == 1), 0.25, math.sqrt(0.25 * 0.75 / N))
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\), but got p=1.5"):
        flow.zeros(2).geometric_(1.5)


def test_log_normal_():
    flow.manual_seed(8)
    a = flow.empty(N, dtype=flow.float64).log_normal_(0.5, 0.25).numpy()
    logs = np.log(a)
    _close(logs.mean(), 0.5, 0.25 / math.sqrt(N))
    _close(logs.std(), 0.25, 0.25 / math.sqrt(2 * N))
    b = flow.empty(N, dtype=flow.float64).log_normal_().numpy()  # defaults mean=1, std=2
    _close(np.log(b).mean(), 1.0, 2 / math.sqrt(N))
    with pytest.raises(RuntimeError, match=r"log_normal_ expects std > 0.0, but found std=-1.0"):
        flow.zeros(2).log_normal_(1, -1)


def test_cauchy_():
    flow.manual_seed(9)
    a = flow.empty(N, dtype=flow.float64).cauchy_(1.0, 2.0).numpy()
    # median 1, quartiles at 1 -+ 2
    _close(np.median(a), 1.0, 0.06)
    _close(np.mean(a < -1.0), 0.25, math.sqrt(0.25 * 0.75 / N))
    _close(np.mean(a < 3.0), 0.75, math.sqrt(0.25 * 0.75 / N))
    with pytest.raises(RuntimeError, match=r"cauchy_ expects sigma > 0.0, but found sigma=0.0"):
        flow.zeros(2).cauchy_(0, 0)


def test_random_():
    flow.manual_seed(10)
    x = flow.zeros(N, dtype=flow.int64)
    assert x.random_(10) is x
    a = x.numpy()
    assert a.min() == 0 and a.max() == 9
    _close(a.mean(), 4.5, math.sqrt(99 / 12 / N))
    b = flow.zeros(N).random_(3, 5).numpy()
    assert set(np.unique(b)) == {3.0, 4.0}
    c = flow.zeros(N, dtype=flow.uint8).random_().numpy()
    assert c.max() > 200  # the whole uint8 range
    d = flow.zeros(1000, dtype=flow.float16).random_().numpy()
    assert d.max() <= 2048 and np.all(d == np.round(d))  # integers float16 holds exactly
    e = flow.zeros(1000, dtype=flow.bool).random_().numpy()
    assert set(np.unique(e)) == {False, True}
    f = flow.zeros(100, dtype=flow.int8).random_(-5, to=None).numpy()
    assert f.min() >= -5
    assert flow.zeros(3, dtype=flow.int32).random_(**{"from": 7, "to": 8}).tolist() == [7, 7, 7]


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((5, 2), {}, RuntimeError, r"expects 'from' to be less than 'to'"),
    ((1, 2, 3), {}, TypeError, r"at most 2 positional arguments"),
    ((1.5,), {}, TypeError, r"argument 'to' must be int, not float"),
    ((), {"low": 1}, TypeError, r"unexpected keyword argument 'low'"),
    ((1,), {"from": 0}, TypeError, r"multiple values for argument 'from'"),
    ((0, 300), {}, RuntimeError, r"to - 1 is out of bounds for uint8"),
])
def test_random_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        flow.zeros(2, dtype=flow.uint8).random_(*args, **kwargs)


def test_randint_like():
    x = flow.zeros(3, 4, dtype=flow.int32)
    r = flow.randint_like(x, 5)
    assert r.dtype is flow.int32 and tuple(r.shape) == (3, 4) and r.numpy().max() < 5
    r2 = flow.randint_like(x, 10, 12, dtype=flow.float64)
    assert r2.dtype is flow.float64 and set(np.unique(r2.numpy())) <= {10.0, 11.0}
    r3 = flow.randint_like(x, low=2, high=3)
    assert r3.tolist() == [[2] * 4] * 3


def test_in_place_draws_use_the_given_generator():
    g = flow.Generator().manual_seed(21)
    a = flow.zeros(5).exponential_(generator=g).tolist()
    g.manual_seed(21)
    assert flow.zeros(5).exponential_(generator=g).tolist() == a
    state = flow.default_generator.get_state()
    flow.zeros(5).cauchy_(generator=g)
    flow.zeros(5, dtype=flow.int64).random_(generator=g)
    assert flow.default_generator.get_state() == state  # the default generator was not used


def test_random_ops_in_a_graph_draw_what_eager_draws():
    def draw(p):
        return flow.multinomial(p, 4, True), flow.bernoulli(p), flow.poisson(p * 10)

    g = flow.nn.Graph.trace(draw)
    p = flow.tensor([0.1, 0.2, 0.7], dtype=flow.float64)
    flow.manual_seed(12)
    eager = [[t.numpy() for t in draw(p)] for _ in range(2)]
    flow.manual_seed(12)
    graph = [[t.numpy() for t in g(p)] for _ in range(2)]
    for e, r in zip(eager, graph):
        for a, b in zip(e, r):
            np.testing.assert_array_equal(a, b)


# ---- rng state, seeds, generators ---------------------------------------------------------------------------------
def test_get_and_set_rng_state_round_trip():
    flow.manual_seed(13)
    state = flow.get_rng_state()
    assert state.dtype is flow.uint8 and state.ndim == 1
    a = flow.rand(4).tolist()
    flow.set_rng_state(state)
    assert flow.rand(4).tolist() == a
    flow.default_generator.set_state(state)
    assert flow.rand(4).tolist() == a
    with pytest.raises(TypeError, match="must be Tensor"):
        flow.set_rng_state(state.numpy().tolist())
    with pytest.raises(RuntimeError, match="uint8 tensor of 48 bytes"):
        flow.set_rng_state(flow.zeros(3, dtype=flow.uint8))


def test_seed_and_initial_seed():
    s = flow.seed()
    assert isinstance(s, int) and flow.initial_seed() == s
    flow.manual_seed(99)
    assert flow.initial_seed() == 99 and flow.default_generator.initial_seed() == 99


def test_default_generator_is_the_cpu_generator_and_callable():
    gen = flow.default_generator
    assert isinstance(gen, flow.Generator) and gen.device == flow.device("cpu")
    assert gen("cpu") is gen and gen() is gen  # OneFlow's default_generator(device)
    gen.manual_seed(4)
    a = flow.rand(3).tolist()
    gen.manual_seed(4)
    assert flow.rand(3).tolist() == a


def test_generator_methods():
    g = flow.Generator(device="cpu")
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    state = g.get_state()
    a = flow.rand(3, generator=g).tolist()
    g.set_state(state)
    assert flow.rand(3, generator=g).tolist() == a
    raw = g.state_bytes()
    b = flow.rand(3, generator=g).tolist()
    g.set_state(raw)
    assert flow.rand(3, generator=g).tolist() == b
    new_seed = g.seed()
    assert g.initial_seed() == new_seed


def test_random_draws_match_torch_shapes_and_errors():
    torch = pytest.importorskip("torch")
    p = [0.2, 0.0, 0.8]
    assert tuple(flow.multinomial(flow.tensor([p, p]), 2).shape) == tuple(torch.multinomial(torch.tensor([p, p]),
                                                                                            2).shape)
    for probs, n, repl in (([0.5, -0.1], 1, True), ([0.0, 0.0], 1, True), ([0.5, 0.5], 3, False)):
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.tensor(probs), n, repl)
        with pytest.raises(RuntimeError):
            flow.multinomial(flow.tensor(probs), n, repl)
    assert flow.zeros(2, dtype=flow.int64).geometric_(0.5).dtype.name == str(
        torch.zeros(2, dtype=torch.int64).geometric_(0.5).dtype)[6:]


def test_flow_random_module_and_fork_rng():
    flow.random.manual_seed(17)
    assert flow.random.initial_seed() == 17
    with flow.random.fork_rng():
        inside = flow.rand(3).tolist()
        flow.manual_seed(1)
    assert flow.rand(3).tolist() == inside  # the block's draws did not move the generator
    assert flow.initial_seed() == 17
    with flow.random.fork_rng(enabled=False):
        flow.rand(1)
    state = flow.random.get_rng_state()
    a = flow.rand(2).tolist()
    flow.random.set_rng_state(state)
    assert flow.rand(2).tolist() == a
    with flow.mock_torch.enable():
        import torch

        torch.random.manual_seed(3)
        assert torch.random.initial_seed() == 3
