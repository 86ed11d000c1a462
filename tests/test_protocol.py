"""The one game protocol: training's vector env and evaluation's gymnasium env see the same pixels,
and an episode on a fixed seed repeats exactly."""

import numpy as np
import pytest

from collect.agent import protocol


def _seed_with_nonnegative_ale_seed():
    # The vector env takes only non-negative emulator seeds (see protocol.vector_env_seeds).
    return next(s for s in range(1000, 2000) if protocol.ale_seed(s) >= 0)


def test_ale_seed_is_what_gymnasium_gives_the_emulator():
    env = protocol.make_eval_env()
    try:
        for seed in (0, 7, 1000, 2**31 + 5):
            _, info = env.reset(seed=seed)
            assert int(np.int32(info["seeds"][1])) == protocol.ale_seed(seed)
    finally:
        env.close()


def test_training_and_evaluation_observations_are_pixel_identical():
    seed = _seed_with_nonnegative_ale_seed()
    eval_env = protocol.make_eval_env()
    train_env = protocol.make_train_vector_env(1)
    try:
        obs_eval, info_eval = eval_env.reset(seed=seed)
        obs_train, info_train = train_env.reset(seed=protocol.vector_env_seeds([seed]))
        np.testing.assert_array_equal(obs_eval, obs_train[0])
        # FIRE-heavy random actions so the ball is served and lives are lost; sticky actions on.
        actions = np.random.default_rng(0).choice(4, size=3000, p=[0.2, 0.4, 0.2, 0.2])
        compared, life_losses = 0, 0
        for action in actions:
            obs_eval, r_eval, term_eval, trunc_eval, info_eval = eval_env.step(int(action))
            obs_train, r_train, term_train, trunc_train, info_train = train_env.step(np.array([action], dtype=np.int32))
            assert term_eval == term_train[0] and trunc_eval == trunc_train[0]
            assert r_eval == r_train[0]
            if term_eval or trunc_eval:
                break  # the vector env has already reset its slot (same-step autoreset)
            life_losses += info_eval["lives"] < info_train["lives"][0] or 0
            assert info_eval["lives"] == info_train["lives"][0]
            np.testing.assert_array_equal(obs_eval, obs_train[0], err_msg=f"step {compared}")
            compared += 1
        assert compared > 100
    finally:
        eval_env.close()
        train_env.close()


def test_protocol_settings_are_those_the_protocol_fixes():
    s = protocol.protocol_settings()
    assert (s["frameskip"], s["sticky_action_probability"], s["frame_stack"], s["screen_size"]) == (4, 0.25, 4, 84)
    assert s["max_episode_frames"] == 108_000 and s["num_actions"] == 4
    env = protocol.make_eval_env()
    try:
        assert env.action_space.n == 4
        assert env.unwrapped.get_action_meanings() == list(protocol.ACTION_MEANINGS)
        assert env.observation_space.shape == protocol.OBSERVATION_SHAPE
    finally:
        env.close()


def test_policy_draws_the_same_random_events_whatever_the_q_values():
    a, b = protocol.EpisodePolicy(5, epsilon=0.3), protocol.EpisodePolicy(5, epsilon=0.3)
    q_left, q_right = np.array([0, 0, 0, 1.0]), np.array([0, 0, 1.0, 0])
    acts_a = [a.act(q_left) for _ in range(500)]
    acts_b = [b.act(q_right) for _ in range(500)]
    differs = [x != y for x, y in zip(acts_a, acts_b)]
    # Where both explored they took the same random action; elsewhere each was greedy.
    assert 0 < sum(differs) < 500
    assert all(x == 3 for x, d in zip(acts_a, differs) if d) and all(y == 2 for y, d in zip(acts_b, differs) if d)


def test_greedy_ties_go_to_the_lowest_index():
    assert protocol.greedy_action(np.array([1.0, 3.0, 3.0, 0.0])) == 1


@pytest.mark.parametrize("seed", [1000])
def test_an_episode_on_a_fixed_seed_repeats_exactly(shipped_model, seed):
    from collect.agent.shipped import torch_q_function

    q = torch_q_function(shipped_model)
    first = protocol.play_episode(q, seed)
    second = protocol.play_episode(q, seed)
    assert first.steps > 100
    assert (first.score, first.steps, first.truncated, first.actions) == (
        second.score,
        second.steps,
        second.truncated,
        second.actions,
    )


def _same_game(a, b, seed: int, choose, steps: int = 20_000) -> tuple[int, bool, bool]:
    """Steps both envs with the same actions until the game ends; every observation, reward and flag equal."""
    obs_a, _ = a.reset(seed=seed)
    obs_b, _ = b.reset(seed=seed)
    np.testing.assert_array_equal(obs_a, obs_b)
    assert obs_b.dtype == np.uint8 and obs_b.shape == protocol.OBSERVATION_SHAPE
    for n in range(steps):
        action = choose(obs_b)
        ra, rb = a.step(action), b.step(action)
        np.testing.assert_array_equal(ra[0], rb[0], err_msg=f"seed {seed}, step {n}")
        assert (ra[1], ra[2], ra[3]) == (rb[1], rb[2], rb[3]), (seed, n)
        if ra[2] or ra[3]:
            return n + 1, bool(ra[2]), bool(ra[3])
    raise AssertionError("the game did not end")


def test_play_env_is_the_protocol_env_bit_for_bit():
    """collect.agent.direct_env (play's env) against gymnasium's chain (make_eval_env): whole games of the shipped
    agent and of FIRE-heavy random actions, and games cut by the frame limit inside a frame skip (the limit at 202
    frames ends the 51st step after its 2nd frame, where gymnasium keeps the previous screens)."""
    from collect.agent import shipped
    from collect.agent.direct_env import DirectEvalEnv

    q = shipped.torch_q_function(shipped.shipped_model())
    rng = np.random.default_rng(0)
    ends = []
    a, b = protocol.make_eval_env(), DirectEvalEnv()
    try:
        assert b.action_space.n == a.action_space.n
        for seed in (0, 2**31 + 5, 123_457):
            ends.append(_same_game(a, b, seed, lambda obs: int(rng.choice(4, p=[0.2, 0.4, 0.2, 0.2]))))
        policy = protocol.EpisodePolicy(11)
        steps, terminated, _ = _same_game(a, b, 11, lambda obs: policy.act(q(obs)))
        assert terminated and steps > 500
    finally:
        a.close()
        b.close()
    assert all(terminated for _, terminated, _ in ends)
    a, b = protocol.make_eval_env(max_episode_frames=202), DirectEvalEnv(max_episode_frames=202)
    try:
        steps, terminated, truncated = _same_game(a, b, 5, lambda obs: 1)
        assert (steps, terminated, truncated) == (51, False, True)
    finally:
        a.close()
        b.close()


def test_training_seeds_start_the_games_evaluation_starts():
    """Every episode seed training hands the C++ vector env gives the emulator the seed gymnasium gives
    it; a seed that would derive a negative one is refused, not folded into another game."""
    negative = [s for s in range(50) if protocol.ale_seed(s) < 0]
    assert negative, "the check needs a seed with a negative derived emulator seed"
    with pytest.raises(ValueError, match="negative emulator seed"):
        protocol.vector_env_seeds([negative[0]])
    seeds = protocol.training_episode_seeds(0, 8)
    assert len(seeds) == 8 and all(protocol.ale_seed(s) >= 0 for s in seeds) and negative[0] not in seeds
    eval_env, train_env = protocol.make_eval_env(), protocol.make_train_vector_env(2)
    try:
        train_env.reset(seed=protocol.vector_env_seeds(seeds[:2]))
        for action in (1, 1, 3, 2, 1, 0, 3, 3):
            obs_train = train_env.step(np.array([action, action], dtype=np.int32))[0]
        for i, seed in enumerate(seeds[:2]):
            eval_env.reset(seed=seed)
            for action in (1, 1, 3, 2, 1, 0, 3, 3):
                obs_eval = eval_env.step(action)[0]
            np.testing.assert_array_equal(obs_eval, obs_train[i])
    finally:
        eval_env.close()
        train_env.close()
