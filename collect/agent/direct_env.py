"""The evaluation environment without gymnasium's layers: the same ALE calls, in the same order, with the same
arguments as ``protocol.make_eval_env`` (ale-py's ``AtariEnv`` with frameskip 1, ``AtariPreprocessing`` and
``FrameStackObservation``), so every observation, reward and end of game is the same, bit for bit.

Why: in play the emulator and its wrappers are about a quarter of a play process's time on the H200 (a protocol
profile: 1.19 ms per agent step). Gymnasium's chain copies a 210x160x3 RGB screen after each of the four skipped
frames (``AtariEnv._get_obs``, which ``AtariPreprocessing`` never reads), builds an info dict four times, checks
the order of calls and deep-copies the frame stack; this class makes only the calls that decide the game and the
observation. ``tests/test_protocol.py`` plays whole games through both on the same seeds and actions and compares
every observation, reward and flag.

What the chain does, step for step (ale-py 0.12, gymnasium 1.4):
  * reset(seed): ``SeedSequence(seed).generate_state(2)`` → the emulator seed (as int32) → ``loadROM`` →
    ``reset_game``; the grayscale screen into buffer 0, buffer 1 zeroed; observation = max(b0, b1) in place into
    b0, resized 84x84 with OpenCV INTER_AREA; the stack is three zero frames and that one.
  * step(a): up to four ``act(minimal_action_set[a], 1.0)``; after each, terminated = ``game_over(False)``,
    truncated = ``game_truncated()``, and the loop stops on either; the screen is grabbed into buffer 1 after
    the third frame and into buffer 0 after the fourth (a game that ends earlier keeps the buffers as they were,
    as gymnasium does); the stack drops its oldest frame.
"""

from __future__ import annotations

import numpy as np

from .protocol import (
    FRAME_STACK,
    FRAMESKIP,
    GAME,
    MAX_EPISODE_FRAMES,
    SCREEN_SIZE,
    STICKY_ACTION_PROBABILITY,
    quiet_emulator,
)


class _Actions:
    def __init__(self, n: int):
        self.n = n


class DirectEvalEnv:
    """``make_eval_env()``'s game, observations and rewards, with ``reset(seed=)``, ``step(action)``,
    ``action_space.n`` and ``close()`` (what ``protocol.EpisodeInPlay`` uses)."""

    def __init__(self, max_episode_frames: int = MAX_EPISODE_FRAMES, game: str = GAME):
        import ale_py
        import cv2
        from ale_py import roms

        quiet_emulator()  # before the interface exists: its constructor prints the ALE/Stella banner otherwise
        self._cv2 = cv2
        self.ale = ale_py.ALEInterface()
        self.ale.setLoggerMode(ale_py.LoggerMode.Error)
        self.ale.setFloat("repeat_action_probability", STICKY_ACTION_PROBABILITY)
        self.ale.setInt("max_num_frames_per_episode", max_episode_frames)
        self.ale.setBool("sound_obs", False)
        self._rom = roms.get_rom_path(game)  # any ALE game under the same protocol (``tasks.atari_task``)
        self._seed(None)
        self.ale.loadROM(self._rom)
        self._actions = list(self.ale.getMinimalActionSet())
        self.action_space = _Actions(len(self._actions))
        height, width = self.ale.getScreenDims()
        self._buffers = [np.empty((height, width), dtype=np.uint8), np.empty((height, width), dtype=np.uint8)]
        self._stack = np.zeros((FRAME_STACK, SCREEN_SIZE, SCREEN_SIZE), dtype=np.uint8)

    def _seed(self, seed) -> None:
        _, ale_seed = np.random.SeedSequence(seed).generate_state(n_words=2)
        self.ale.setInt("random_seed", np.int32(ale_seed))

    def _frame(self) -> np.ndarray:
        b0, b1 = self._buffers
        np.maximum(b0, b1, out=b0)
        return np.asarray(
            self._cv2.resize(b0, (SCREEN_SIZE, SCREEN_SIZE), interpolation=self._cv2.INTER_AREA), dtype=np.uint8
        )

    def reset(self, *, seed: int | None = None, options=None):
        if seed is not None:
            self._seed(seed)
            self.ale.loadROM(self._rom)
        self.ale.reset_game()
        self.ale.getScreenGrayscale(self._buffers[0])
        self._buffers[1].fill(0)
        self._stack[:] = 0
        self._stack[-1] = self._frame()
        return self._stack.copy(), {}

    def step(self, action: int):
        ale, index = self.ale, self._actions[action]
        reward, terminated, truncated = 0.0, False, False
        for t in range(FRAMESKIP):
            reward += ale.act(index, 1.0)
            terminated = ale.game_over(with_truncation=False)
            truncated = ale.game_truncated()
            if terminated or truncated:
                break
            if t == FRAMESKIP - 2:
                ale.getScreenGrayscale(self._buffers[1])
            elif t == FRAMESKIP - 1:
                ale.getScreenGrayscale(self._buffers[0])
        self._stack[:-1] = self._stack[1:]
        self._stack[-1] = self._frame()
        return self._stack.copy(), reward, terminated, truncated, {}

    def close(self) -> None:
        self.ale = None
