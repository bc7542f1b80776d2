"""A profile whose holdings leave the consumers' box [-borrowing_limit, holding_limit] is not one the model
allows, even where every budget holds: each certificate of the exchange economies reports how far it is
outside (``box_violation``; ``holding_violation`` for the stationary one) and none certifies it. The
constructions that balance the asset market through one consumer keep her inside the box."""
import json
from pathlib import Path

import numpy as np
import pytest
from test_games_economy_clip_tree import _economy as floors_economy
from test_games_economy_clip_tree import _random_profile as floors_profile
from test_games_economy_lattice import tiny_economy

from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy as ec
from solvopt.games import economy_clip as cl
from solvopt.games import economy_clip_tree as ct
from solvopt.games import economy_lattice as el
from solvopt.games.economy_horizon import degree_metrics, time_expanded

REPO = Path(__file__).resolve().parents[1]


def test_the_holding_violation_is_the_distance_outside_the_box_over_its_width():
    econ = floors_economy(0)                               # holdings in [-1, 1]
    assert ec.holding_violation(econ, np.array([[-1.0, 1.0], [0.3, -0.2]])) == 0.0
    assert ec.holding_violation(econ, np.array([[1.5, 0.0]])) == pytest.approx(0.25)
    assert ec.holding_violation(econ, np.array([[0.0, -3.0]])) == pytest.approx(1.0)
    p = np.full((2, econ.n_goods), econ.price_sum / econ.n_goods)
    assert ec.box_violation(econ, p, np.array([0.2, 1.5]), np.zeros((2, 2))) == pytest.approx(0.5)


def _free_class(q):
    """Index of a class or period whose asset price is 0: a holding there costs nothing, so a holding
    beyond the box keeps every budget."""
    free = np.flatnonzero(np.asarray(q).ravel() == 0.0)
    assert len(free), "the profile needs a class whose asset price is 0"
    return int(free[0])


def test_the_floors_tree_certificate_does_not_certify_a_holding_beyond_the_limit():
    econ = floors_economy(3, T=3)
    lat, prof = floors_profile(econ, 0)                    # it has a class at asset price 0
    prof.consumption[:] = 0.0                              # nobody overspends
    m, expl, _ = ct.tree_certificate(econ, lat, prof)
    assert m["box_violation"] <= 1e-12 and expl.certified
    k = _free_class(prof.asset_prices[:, 0])
    prof.portfolio[k, 0, 0] = float(econ.holding_limit[0]) + 0.5
    out, expl, _ = ct.tree_certificate(econ, lat, prof)
    assert out["budget_violation"] == pytest.approx(m["budget_violation"], abs=1e-15)
    assert out["box_violation"] == pytest.approx(0.25)
    assert not expl.certified


def test_the_floors_path_certificate_does_not_certify_a_holding_beyond_the_limit():
    econ = floors_economy(4, T=4, stochastic=False)
    T, N, M = 4, econ.n_consumers, econ.n_goods
    rng = np.random.default_rng(0)
    worlds = np.array([0, 1, 1, 1])
    prices = rng.dirichlet(np.ones(M), T) * econ.price_sum
    q = np.array([0.05, 0.02, 0.03, 0.0])
    y = np.array([[0.2, -0.3], [0.1, 0.0], [-0.5, 0.4], [0.0, 0.0]])
    x = np.full((T, N, M), 1e-3)
    m, expl, _ = cl.clip_metrics(econ, worlds, prices, q, x, y)
    assert m["box_violation"] <= 1e-12 and m["budget_violation"] <= 1e-9 and expl.certified
    y[T - 1, 0] = float(econ.holding_limit[0]) + 0.5        # the last period: pays nothing, costs nothing
    out, expl, _ = cl.clip_metrics(econ, worlds, prices, q, x, y)
    assert out["budget_violation"] <= 1e-9
    assert out["box_violation"] == pytest.approx(0.25)
    assert not expl.certified


def test_the_lattice_certificate_does_not_certify_a_holding_beyond_the_limit():
    econ = tiny_economy(2, 1)                              # holdings in [-2, 2]
    rng = np.random.default_rng(3)

    def solve_class(t, w, carried):                        # long holdings bought cheaply: every budget holds
        return np.full(2, 1.0), rng.uniform(0.0, 0.1), rng.uniform(0.0, 0.5, 2), np.zeros((2, 2))
    lat, prof = el.grow(econ, solve_class)
    m, expl = el.certificate(econ, lat, prof)
    assert m["box_violation"] <= 1e-12 and expl.certified
    prof.portfolio[0, 1, 0] = -2.0 - 4.0
    out, expl = el.certificate(econ, lat, prof)
    assert out["box_violation"] == pytest.approx(1.0)
    assert not expl.certified


def test_the_degree_path_certificate_does_not_certify_a_holding_beyond_the_limit():
    econ = tiny_economy(4, 0.5, P=np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    x = time_expanded(econ)
    chain = ec.pair_chain(x.economy)
    prof = ec.initial_profile(x.economy, chain)
    prof.asset_prices[0] = 0.0                             # a holding in state 0 then costs nothing
    m, expl, _ = degree_metrics(x, prof)
    assert m["box_violation"] <= 1e-12 and expl.certified
    prof.portfolio[0, 0, 0] = 2.0 + 2.0
    out, expl, _ = degree_metrics(x, prof)
    assert out["box_violation"] == pytest.approx(0.5)
    assert not expl.certified


def test_the_stationary_certificate_does_not_certify_a_holding_beyond_the_limit():
    econ = MarkovExchangeEconomy.from_dict(json.loads((REPO / "instances/games/markov_exchange_economy.json")
                                                      .read_text()))
    chain = ec.pair_chain(econ)
    prof = ec.initial_profile(econ, chain)
    prof.asset_prices[chain.world == 0] = 0.0              # world state 0's holdings then cost nothing
    m, expl = ec.certificate(econ, chain, prof)
    assert m["holding_violation"] <= 1e-12 and expl.certified
    prof.portfolio[0, 0, 0] = float(econ.holding_limit[0]) * 3.0
    out, expl = ec.certificate(econ, chain, prof)
    assert out["holding_violation"] > 0.0
    assert not expl.certified


def test_the_consumer_who_balances_the_asset_market_stays_inside_her_box():
    # the other consumer short at her borrowing limit (3) is beyond the balancing one's holding limit (1): the
    # rest of the imbalance is left to the auctioneer rather than to a holding the model does not allow
    econ = floors_economy(1, T=4, borrowing=3.0, stochastic=False)
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    worlds = np.array([0, 1, 1, 1])
    prices = np.full((4, econ.n_goods), econ.price_sum / econ.n_goods)
    Y = np.full((5, 2), lo)
    assert cl._balance(econ, worlds, prices, Y, lo, short=0) == 0
    assert Y[:4, 0] == pytest.approx(np.full(4, hi))
    Yt = np.full((4, 2), lo)
    assert ct._balance(econ, None, Yt, lo, short=0) == 0
    assert Yt[:3, 0] == pytest.approx(np.full(3, hi))
