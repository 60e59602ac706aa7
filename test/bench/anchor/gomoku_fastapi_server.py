#!/usr/bin/env python3
"""OpenTinker's (Python) gomoku environment server, re-implemented for measurement only.

This is NOT upstream code and not part of the product. It exists so that test/bench/env-protocol.bench.js
can measure the Python anchor with the same client, on the same machine, as our `opentinker env serve`.
It was written from a reading of these upstream files (github.com/open-tinker/OpenTinker and forks):

  - opentinker/environment/base_game_server.py  (create_game_app / run_game_server)
      FastAPI app; pydantic request models; a dict of live games guarded by a threading.Lock;
      reset and step run in a ThreadPoolExecutor(max_workers=max(pool_size, 32)) via
      loop.run_in_executor; per-job statistics (MultiJobGameStats -> BaseGameStats, each with its own
      threading.Lock) updated on every reset (with a "[DEBUG] Game registered" print per new game) and
      on every step; plain dict responses (FastAPI's jsonable_encoder); uvicorn.run(app,
      log_level="warning") with one worker and uvicorn's automatic loop/http choice.
  - opentinker/environment/gomoku/gomoku_game.py  (GomokuGame)
      list-of-lists board of '.', 'X', 'O'; regex move parser for <move>row,col</move>; four-direction
      win check after each stone; the opponent ("strategic", OPPONENT_RANDOM_PROB = 0.3): with
      probability 0.3 a random empty cell, else a winning cell, else a blocking cell, else the best
      own-line-count score with a small centre bonus, else a random cell among the third nearest the
      centre; the text board rendered into every observation; timeout at max_total_steps (40).
  - opentinker/environment/gomoku/gomoku_server.py  (defaults: board_size 9, max_total_steps 40)

What differs from upstream, on purpose:
  - Routes and bodies follow OUR protocol so one client drives both servers: POST /v1/episodes
    (upstream: POST /reset with a client-chosen instance_id), POST /v1/episodes/{id}/step (upstream:
    POST /step with instance_id in the body), DELETE /v1/episodes/{id} -> 204 (upstream: POST
    /finalize). The episode id is a server-made uuid4. The create response carries our
    {episode_id, messages, task} plus upstream's game_state; step responses carry upstream's
    {observation, reward, done, info} plus observation_role. Upstream's info keys are kept (the
    opponent's move is info.env_move; ours is info.opponent_move; the bench client reads either).
  - --opponent-random-prob sets OPPONENT_RANDOM_PROB (upstream: a class constant 0.3) so that a
    pure random opponent (1.0) can be compared with our `opponent: "random"`.
  - No pre-initialised game pool (upstream's default pool_size is 0 too), no /stats read routes, no
    data generator (random openings); the seed in the request is accepted and ignored (upstream
    uses the global `random` module).
  - Debian 12's python3-fastapi 0.92 / pydantic 1.10 / uvicorn 0.17 instead of upstream's
    pydantic-2-era versions (upstream calls model_dump(); here .dict()).
"""

import argparse
import asyncio
import queue  # noqa: F401  (upstream imports it for its game pool; kept for parity of import cost)
import random
import re
import sys
import threading
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional

import uvicorn
from fastapi import FastAPI, HTTPException, Response
from pydantic import BaseModel

# --------------------------------------------------------------------------- the game

MOVE_RE = re.compile(r"<move>\s*(\d+)\s*,\s*(\d+)\s*</move>", re.IGNORECASE)
DIRS = ((0, 1), (1, 0), (1, 1), (1, -1))


class StepResult:
    __slots__ = ("observation", "reward", "done", "info")

    def __init__(self, observation: str, reward: float, done: bool, info: Dict[str, Any]):
        self.observation = observation
        self.reward = reward
        self.done = done
        self.info = info


class Gomoku:
    """Same rules, rewards and opponent as upstream GomokuGame; model = X, environment = O."""

    WIN, LOSS, DRAW, INVALID, TIMEOUT, TOO_MANY_INVALID = 10.0, -10.0, 0.0, -1.0, -20.0, -20.0
    MAX_INVALID = 100
    EMPTY, X, O = ".", "X", "O"

    def __init__(self, board_size: int = 9, win_length: int = 5, max_total_steps: int = 40, random_prob: float = 0.3):
        self.n = board_size
        self.win_length = min(win_length, board_size)
        self.max_total_steps = max_total_steps
        self.random_prob = random_prob
        self._fresh()

    def _fresh(self) -> None:
        self.board = [[self.EMPTY] * self.n for _ in range(self.n)]
        self.moves = 0
        self.over = False
        self.winner: Optional[str] = None
        self.last: Optional[tuple] = None
        self.invalid_in_a_row = 0
        self.steps = 0

    # -- what the server asks for
    def reset(self, initial_moves: Optional[List] = None, **_ignored: Any) -> str:
        self._fresh()
        player = self.X
        for mv in initial_moves or []:
            if len(mv) >= 2 and self._on_board(mv[0], mv[1]) and self.board[mv[0]][mv[1]] == self.EMPTY:
                self.board[mv[0]][mv[1]] = player
                self.moves += 1
                player = self.O if player == self.X else self.X
        return self.render()

    def system_prompt(self) -> str:
        c = self.n // 2
        return (
            f"You are playing Gomoku (Five in a Row) on a {self.n}x{self.n} board.\n"
            f"You play as X. Your goal is to get {self.win_length} in a row.\n\n"
            "IMPORTANT: You MUST respond in the following format:\n"
            "1. First, analyze the board in <thinking></thinking> tags\n"
            "2. Then, output your move in <move>row,col</move> tags\n\n"
            f"Example: <thinking>I should take the center.</thinking><move>{c},{c}</move>"
        )

    def first_message(self) -> str:
        return f"Game starts. Here's the board:\n\n{self.render()}\n\nYour turn (X). Provide your thinking and move:"

    def state(self) -> Dict[str, Any]:
        return {
            "board_array": [list(r) for r in self.board],
            "board_visual": self.render(),
            "move_count": self.moves,
            "last_move": list(self.last) if self.last else None,
            "game_over": self.over,
            "winner": self.winner,
        }

    def step(self, action: str) -> StepResult:
        if self.over:
            return StepResult(self.render(), -5.0, True, {"error": "Game already over"})
        self.steps += 1
        if self.steps >= self.max_total_steps:
            self.over = True
            return StepResult(f"TIMEOUT: Maximum steps ({self.max_total_steps}) reached.\n\n{self.render()}", self.TIMEOUT, True,
                              {"error": "timeout", "total_steps": self.steps})
        m = MOVE_RE.search(action.strip())
        row, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        bad = self._invalid(row, col)
        if bad is not None:
            return bad
        self.invalid_in_a_row = 0
        self.board[row][col] = self.X
        self.moves += 1
        self.last = (row, col)
        if self._wins(row, col, self.X):
            self.over, self.winner = True, self.X
            return StepResult(f"Congratulations! You win!\n\n{self.render()}", self.WIN, True,
                              {"winner": "X", "move": [row, col], "board_state": self.state()})
        if self.moves >= self.n * self.n:
            self.over = True
            return StepResult(f"Game is a draw!\n\n{self.render()}", self.DRAW, True, {"winner": None, "draw": True})
        er, ec = self._opponent()
        self.board[er][ec] = self.O
        self.moves += 1
        if self._wins(er, ec, self.O):
            self.over, self.winner = True, self.O
            return StepResult(f"You lose! Opponent placed O at ({er},{ec}).\n\n{self.render()}", self.LOSS, True,
                              {"winner": "O", "env_move": [er, ec]})
        if self.moves >= self.n * self.n:
            self.over = True
            return StepResult(f"Game is a draw!\n\n{self.render()}", self.DRAW, True, {"winner": None, "draw": True})
        obs = (f"Opponent placed O at ({er},{ec}).\n\n{self.render()}\n\n"
               "Your turn (X). Analyze and provide your move:\n<thinking>your analysis</thinking>\n<move>row,col</move>")
        return StepResult(obs, 0.0, False, {"your_move": [row, col], "env_move": [er, ec]})

    def render(self) -> str:
        out = ["  " + " ".join(str(c) for c in range(self.n))]
        for r in range(self.n):
            out.append(f"{r} " + " ".join(self.board[r]))
        return "\n".join(out)

    # -- helpers
    def _on_board(self, r: int, c: int) -> bool:
        return 0 <= r < self.n and 0 <= c < self.n

    def _too_many_invalid(self) -> Optional[StepResult]:
        self.invalid_in_a_row += 1
        if self.invalid_in_a_row >= self.MAX_INVALID:
            self.over = True
            return StepResult("ERROR: Too many invalid moves. Game over.", self.TOO_MANY_INVALID, True, {"error": "max_invalid_moves"})
        return None

    def _invalid(self, row: Optional[int], col: Optional[int]) -> Optional[StepResult]:
        if row is None or col is None:
            return self._too_many_invalid() or StepResult(
                "ERROR: Invalid move format.\nUse: <thinking>analysis</thinking><move>row,col</move>", self.INVALID, False, {"error": "invalid_format"})
        if not self._on_board(row, col):
            return self._too_many_invalid() or StepResult(
                f"ERROR: Position ({row},{col}) is OUT OF BOUNDS.\nValid range: 0-{self.n - 1}\n\n{self.render()}", self.INVALID, False,
                {"error": "out_of_bounds", "row": row, "col": col})
        if self.board[row][col] != self.EMPTY:
            return self._too_many_invalid() or StepResult(
                f"ERROR: Position ({row},{col}) is OCCUPIED.\n\n{self.render()}", self.INVALID, False, {"error": "occupied", "row": row, "col": col})
        return None

    def _run(self, r: int, c: int, dr: int, dc: int, who: str) -> int:
        k = 0
        r, c = r + dr, c + dc
        while self._on_board(r, c) and self.board[r][c] == who:
            k += 1
            r, c = r + dr, c + dc
        return k

    def _wins(self, r: int, c: int, who: str) -> bool:
        for dr, dc in DIRS:
            if 1 + self._run(r, c, dr, dc, who) + self._run(r, c, -dr, -dc, who) >= self.win_length:
                return True
        return False

    def _opponent(self) -> tuple:
        empty = [(r, c) for r in range(self.n) for c in range(self.n) if self.board[r][c] == self.EMPTY]
        if random.random() < self.random_prob:
            return random.choice(empty)
        for who in (self.O, self.X):  # win if possible, else block
            for r, c in empty:
                self.board[r][c] = who
                hit = self._wins(r, c, who)
                self.board[r][c] = self.EMPTY
                if hit:
                    return r, c
        centre = self.n // 2
        best, best_score = None, -1.0
        for r, c in empty:
            score = 0.0
            for dr, dc in DIRS:
                score += self._run(r, c, dr, dc, self.O) + self._run(r, c, -dr, -dc, self.O)
            score += 0.1 / (abs(r - centre) + abs(c - centre) + 1)
            if score > best_score:
                best, best_score = (r, c), score
        if best is not None and best_score > 0:
            return best
        empty.sort(key=lambda rc: abs(rc[0] - centre) + abs(rc[1] - centre))
        return random.choice(empty[: max(1, len(empty) // 3)])


# --------------------------------------------------------------------------- statistics (as upstream)


class GameStats:
    """Per-job counters updated on every reset and step under a lock, as upstream BaseGameStats."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._step_stats: Dict[str, List[float]] = defaultdict(list)
        self._cumulative: Dict[str, float] = defaultdict(float)
        self._per_game: Dict[str, Dict[str, float]] = {}
        self._started: set = set()

    def game_started(self, instance_id: str, job_id: str) -> None:
        with self._lock:
            if instance_id not in self._started:
                self._started.add(instance_id)
                print(f"[DEBUG] Game registered on reset: {instance_id} (job_id={job_id}, total: {len(self._started)})")

    def record(self, info: Dict[str, Any], reward: float, done: bool, instance_id: str, job_id: str) -> None:
        with self._lock:
            self._started.add(instance_id)
            g = self._per_game.setdefault(instance_id, {"sum_reward": 0.0, "step_count": 0})
            g["sum_reward"] += reward
            g["step_count"] += 1
            if done:
                n = g["step_count"]
                self._step_stats["game_completed"].append(1.0)
                self._step_stats["final_rewards"].append(reward)
                self._step_stats["sum_rewards"].append(g["sum_reward"])
                self._step_stats["avg_rewards"].append(g["sum_reward"] / n if n else 0.0)
                self._step_stats["game_step_counts"].append(float(n))
                self._cumulative["total_games"] += 1
                del self._per_game[instance_id]
            self._step_stats["all_step_rewards"].append(reward)


class JobStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: Dict[str, GameStats] = {}

    def job(self, job_id: str = "default") -> GameStats:
        with self._lock:
            if job_id not in self._jobs:
                self._jobs[job_id] = GameStats()
            return self._jobs[job_id]


# --------------------------------------------------------------------------- HTTP


class CreateEpisode(BaseModel):
    seed: int
    task: Optional[Any] = None
    split: Optional[str] = None
    index: Optional[int] = None
    config: Optional[Dict[str, Any]] = None
    job_id: str = "default"

    class Config:
        extra = "allow"


class StepBody(BaseModel):
    action: str = ""
    job_id: str = "default"


def create_app(board_size: int, win_length: int, max_total_steps: int, random_prob: float) -> FastAPI:
    app = FastAPI(title="Gomoku anchor server", description="OpenTinker's Python gomoku server, re-implemented for measurement")
    games: Dict[str, Gomoku] = {}
    games_lock = threading.Lock()
    executor = ThreadPoolExecutor(max_workers=32)
    stats = JobStats()

    def new_game() -> Gomoku:
        return Gomoku(board_size=board_size, win_length=win_length, max_total_steps=max_total_steps, random_prob=random_prob)

    @app.get("/health")
    async def health():
        return {"status": "ok", "episodes": len(games)}

    @app.get("/v1/info")
    async def info():
        return {"id": "gomoku-anchor", "version": "0", "protocol_version": "1", "turn_mode": "multi",
                "config": {"board_size": board_size, "win_length": win_length, "max_total_steps": max_total_steps,
                           "opponent_random_prob": random_prob}}

    @app.post("/v1/episodes", status_code=201)
    async def create(body: CreateEpisode):
        instance_id = uuid.uuid4().hex
        task = body.task if isinstance(body.task, dict) else {}
        reset_kwargs = {"initial_moves": task.get("opening") or task.get("initial_moves")}

        def do_reset():
            with games_lock:
                game = games.get(instance_id)
                if game is None:
                    game = new_game()
                    games[instance_id] = game
            return game, game.reset(**reset_kwargs)

        game, observation = await asyncio.get_event_loop().run_in_executor(executor, do_reset)
        stats.job(body.job_id).game_started(instance_id, body.job_id)
        first = game.first_message()
        user = f"{first}\n\n{observation}" if observation else first
        return {
            "episode_id": instance_id,
            "messages": [{"role": "system", "content": game.system_prompt()}, {"role": "user", "content": user}],
            "task": body.task,
            "game_state": game.state(),
        }

    @app.post("/v1/episodes/{episode_id}/step")
    async def step(episode_id: str, body: StepBody):
        game = games.get(episode_id)
        if game is None:
            raise HTTPException(status_code=404, detail=f"Instance {episode_id} not found. Call /reset first.")
        result = await asyncio.get_event_loop().run_in_executor(executor, game.step, body.action)
        stats.job(body.job_id).record(result.info, result.reward, result.done, episode_id, body.job_id)
        return {"observation": result.observation, "observation_role": "user", "reward": result.reward,
                "done": result.done, "info": result.info}

    @app.delete("/v1/episodes/{episode_id}", status_code=204)
    async def finalize(episode_id: str):
        with games_lock:
            game = games.pop(episode_id, None)
        if game is None:
            raise HTTPException(status_code=404, detail=f"Instance {episode_id} not found")
        return Response(status_code=204)

    return app


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8081)
    p.add_argument("--board_size", type=int, default=9)
    p.add_argument("--win_length", type=int, default=5)
    p.add_argument("--max_total_steps", type=int, default=40)
    p.add_argument("--opponent-random-prob", type=float, default=0.3, help="upstream's OPPONENT_RANDOM_PROB (0.3); 1.0 = random opponent")
    p.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"])
    p.add_argument("--http", default="auto", choices=["auto", "h11", "httptools"])
    a = p.parse_args()
    app = create_app(a.board_size, a.win_length, a.max_total_steps, a.opponent_random_prob)
    config = uvicorn.Config(app, host=a.host, port=a.port, log_level="warning", loop=a.loop, http=a.http, workers=1)
    server = uvicorn.Server(config)

    @app.on_event("startup")
    async def announce():
        loop = asyncio.get_running_loop()
        proto = getattr(config, "http_protocol_class", None)
        import fastapi
        import pydantic
        print(f"ANCHOR READY loop={type(loop).__module__}.{type(loop).__name__} "
              f"http={getattr(proto, '__module__', '?')}.{getattr(proto, '__name__', '?')} "
              f"python={sys.version.split()[0]} fastapi={fastapi.__version__} pydantic={pydantic.VERSION} uvicorn={uvicorn.__version__}",
              flush=True)

    server.run()


if __name__ == "__main__":
    main()
