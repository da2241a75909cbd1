"""The attempt loop: each model's lane of workers taking trials, calling, retrying and storing as calls end.

``executor.run_backlog`` makes one ``AttemptLoop`` per session and one ``Lane`` per model, and starts the
workers (``AttemptLoop.worker``) and the commit ticker. A worker takes a batch from its lane (read a window
ahead from the lane's source, trials done in the store skipped), builds the requests (in a worker thread
unless ``prepare`` says they are cheap), reserves the budget, calls (a composite through its stage calls,
``run/stage_calls.py``), stores the attempt in the store's commit group, and decides what follows (retry
after the policy's delay, a lane paused by Retry-After, or a stop of the whole run). The rules are the
executor's (``run/executor.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from vidaudit.core.types import Attempt, ErrorKind, Request, Response
from vidaudit.models.base import CompositeAdapter, ModelAdapter, ModelCallError
from vidaudit.run.backlog import NOT_TRIED, attempt_limit
from vidaudit.run.budget import BudgetTracker, Reservation, bounded, response_tokens
from vidaudit.run.lanes import (
    GROUP_ROWS,
    Batched,
    Item,
    Lane,
    LoopState,
    composite_error,
    ok_attempt,
)
from vidaudit.run.retry import Clock, Decision, RetryPolicy, status_for
from vidaudit.run.stage_calls import StageContext, StageRunner
from vidaudit.run.store.records import StageRef
from vidaudit.run.store.writer import RunStore
from vidaudit.run.summary import ProgressEvent, StopReason


class AttemptLoop:
    """The workers of a session's lanes: take trials, build requests, call, retry, store, stop; one per session."""

    def __init__(
        self,
        store: RunStore,
        prepare: Callable[[Any], Request],
        max_attempts: int,
        tracker: BudgetTracker,
        policy: RetryPolicy,
        clock: Clock,
        on_progress: Callable[[ProgressEvent], Any] | None,
        state: LoopState,
        semaphores: dict[int, asyncio.Semaphore],
    ) -> None:
        self.store = store
        self.prepare = prepare
        self.max_attempts = max_attempts
        self.tracker = tracker
        self.policy = policy
        self.clock = clock
        self.on_progress = on_progress
        self.s = state
        self.stages = StageRunner(
            store, clock, may_start=self._stage_may_start, on_end=self._stage_ended, semaphores=semaphores
        )
        self.limit = attempt_limit(max_attempts, False)
        self.committed_at_start = store.committed
        #: ``prepare.inline(planned)``: True where building the request is cheap (no file read), so it is
        #: built here rather than in a worker thread
        self.inline = getattr(prepare, "inline", None)
        self._flush_task: asyncio.Future[int] | None = None
        self._unyielded = 0  # attempts stored since a worker last yielded to the loop
        self._room_waiters: deque[asyncio.Future[None]] = deque()  # workers waiting for a commit to end

    # ------------------------------------------------------------------ events

    def emit(self, kind: str, message: str | None = None) -> None:
        if self.on_progress is None:
            return
        s = self.s
        self.on_progress(
            ProgressEvent(
                kind=kind,
                total=s.total,
                done=s.done,
                ok=s.ok,
                errors=sum(s.failed_attempts.values()),
                cost_usd=s.cost_usd,
                tokens=s.tokens,
                skipped=s.skipped,
                message=message,
            )
        )

    def stop(self, reason: StopReason, message: str, fatal: BaseException | None = None) -> None:
        if self.s.stopped:
            return
        self.s.stop_reason, self.s.stop_message, self.s.fatal = reason, message, fatal
        self._wake_waiters()  # every worker waiting for room sees the stop
        self.emit("stop", message)

    # ------------------------------------------------------------------ workers

    def take(self, lane: Lane) -> list[Item]:
        """The lane's next call (one item, or a batch), reading more of its plan when it runs low."""
        if lane.source is not None and len(lane.queue) <= lane.window // 2:
            self._refill(lane)
        out: list[Item] = []
        while lane.queue and len(out) < lane.batch_size:
            out.append(lane.queue.popleft())
        return out

    def _refill(self, lane: Lane) -> None:
        """Read the lane's plan until its window is full, skipping what the store says is done (no await)."""
        while lane.source is not None and len(lane.queue) < lane.window:
            chunk = list(itertools.islice(lane.source, max(lane.window, 64)))
            if not chunk:
                lane.source = None
                break
            if not lane.lookup:  # none of this lane's trials had attempts: each is to run, from attempt 1
                first = self.limit(0)
                lane.queue.extend(Item(p, p.id, 0, first) for p in chunk)
                continue
            status = self.store.trial_status([p.id for p in chunk])
            for p in chunk:
                st = status.get(p.id, NOT_TRIED)
                if not st.ok and st.attempts < self.limit(st.attempts):
                    lane.queue.append(Item(p, p.id, st.attempts, self.limit(st.attempts)))

    async def flush(self) -> None:
        """Commit the store's pending group in a worker thread; a failure stops the run (STORE_ERROR).

        One commit at a time; while it runs, the others append to the next group, and wait for room once
        that group is twice the group size (so what is pending stays bounded, whatever the model's speed).
        The end of a commit wakes as many waiting workers as the next group has room for, not all of them: a
        run of many lanes has hundreds waiting, and each woken past the room would only wait again."""
        if self._flush_task is not None:
            if self.store.pending >= 2 * GROUP_ROWS:
                await self._wait_for_room()
            return
        if not self.store.pending:
            return
        self._flush_task = task = asyncio.ensure_future(asyncio.to_thread(self.store.flush))
        try:
            await task
        except Exception as e:
            self._lost_group()
            self.stop(StopReason.STORE_ERROR, f"{type(e).__name__}: {e}", fatal=e)
        finally:
            self._flush_task = None
            self._wake_waiters()

    async def _wait_for_room(self) -> None:
        """Wait until a commit ends and wakes this worker (see ``flush``); cancelled with the worker."""
        room = asyncio.get_running_loop().create_future()
        self._room_waiters.append(room)
        await room

    def _wake_waiters(self) -> None:
        """Wake the workers waiting for room: as many as the pending group has room for (at least one, so that a
        woken worker's next attempt starts the next commit), every one once the run stops."""
        n = len(self._room_waiters) if self.s.stopped else max(2 * GROUP_ROWS - self.store.pending, 1)
        while n > 0 and self._room_waiters:
            room = self._room_waiters.popleft()
            if not room.done():  # a cancelled worker's is done
                room.set_result(None)
                n -= 1

    def _lost_group(self) -> None:
        """Count the appended attempts that no commit took (a failed group) as unstored."""
        lost = self.s.calls - (self.store.committed - self.committed_at_start) - self.store.pending
        if lost > 0:
            self.s.unstored += lost
            self.s.calls -= lost

    async def ticker(self, delay_s: float) -> None:
        """Commit a pending group at least every ``delay_s`` (real time) while the run lasts, and wake workers
        left waiting for room when no commit is running (those woken before may have found their lanes empty)."""
        while True:
            await asyncio.sleep(delay_s)
            if self.store.flush_due():
                await self.flush()
            elif self._flush_task is None:
                self._wake_waiters()

    async def worker(self, lane: Lane) -> None:
        try:
            while not self.s.stopped:
                items = self.take(lane)
                if not items:
                    return
                await self.process(lane, items)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a store or progress failure: stop cleanly, raise after the gather
            self.stop(StopReason.STORE_ERROR, f"{type(e).__name__}: {e}", fatal=e)

    async def _prepare(self, items: list[Item], inline: bool = False) -> bool:
        for it in items:
            if it.request is not None:
                continue
            try:
                if inline or (self.inline is not None and self.inline(it.planned)):
                    request = self.prepare(it.planned)
                else:
                    request = await asyncio.to_thread(self.prepare, it.planned)
                if not isinstance(request, Request) and inspect.isawaitable(request):
                    request = await request
            except Exception as e:
                self.stop(
                    StopReason.PREPARE_ERROR,
                    f"preparing trial {it.trial_id} failed with {type(e).__name__}: {e}",
                    fatal=e,
                )
                return False
            if not isinstance(request, Request):
                err = TypeError(f"prepare() returned {type(request).__name__}, expected a Request")
                self.stop(StopReason.PREPARE_ERROR, f"preparing trial {it.trial_id}: {err}", fatal=err)
                return False
            if request.trial_id != it.trial_id:
                err = ValueError(f"prepare() built a request for trial {request.trial_id}, not {it.trial_id}")
                self.stop(StopReason.PREPARE_ERROR, str(err), fatal=err)
                return False
            it.request = request
        return True

    async def _wait_gate(self, lane: Lane) -> None:
        while not self.s.stopped and (wait := lane.not_before - self.clock.now()) > 0:
            await self.clock.sleep(wait)

    def _reserve(self, items: list[Item]) -> tuple[list[Item], Reservation | None]:
        """The longest prefix of ``items`` whose estimates fit the budget; stops the run if not all fit."""
        estimates = []
        for it in items:
            it.estimate = self.tracker.estimate(it.planned)
            estimates.append(it.estimate)
        for k in range(len(items), 0, -1):
            res = self.tracker.reserve(estimates[:k])
            if res is not None:
                if k < len(items):
                    self._budget_stop(estimates[k])
                return items[:k], res
        self._budget_stop(estimates[0])
        return [], None

    def _budget_stop(self, next_call: Reservation | None = None) -> None:
        if next_call is not None:
            why = (
                f"the budget stopped the run before a call that could cross it: the next call "
                f"{self.tracker.why_not(next_call)}"
            )
        else:
            why = (
                f"the budget is spent ({self.tracker.describe()}, {self.tracker.reserved_cost_usd:.4f} USD "
                "reserved by calls in flight): no new stage call was started"
            )
        self.stop(StopReason.BUDGET, why)

    async def _call(
        self, lane: Lane, items: list[Item], ctx: StageContext | None
    ) -> tuple[list[Response] | None, BaseException | None, float, float]:
        requests = [it.request for it in items if it.request is not None]
        started = self.clock.now()
        try:
            if len(requests) != len(items):
                raise TypeError("a trial reached its call without a built request")
            if ctx is not None:
                responses = [await cast(CompositeAdapter, lane.adapter).run(requests[0], self.stages.caller(ctx))]
            elif len(items) > 1 or lane.batch_size > 1:
                responses = list(await cast(Batched, lane.adapter).generate_batch(requests))
                if len(responses) != len(items):
                    raise TypeError(f"generate_batch returned {len(responses)} responses for {len(items)} requests")
            else:
                responses = [await cast(ModelAdapter, lane.adapter).generate(requests[0])]
            for r in responses:
                if not isinstance(r, Response):
                    raise TypeError(f"adapter returned {type(r).__name__}, expected a Response")
            return responses, None, started, self.clock.now()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            return None, e, started, self.clock.now()

    async def _store(self, attempt: Attempt, ctx: StageContext | None = None, yield_every: int = 1) -> None:
        """Append to the store's commit group (``RunStore.grouped``); commit the group when it is due, else
        yield to the loop once in ``yield_every`` attempts (``Lane.yield_every``)."""
        stages: list[StageRef] | None = list(ctx.refs) if ctx is not None else None
        try:
            self.store.append(attempt, stages=stages)
        except Exception:
            self.s.unstored += 1
            self._lost_group()
            raise
        self.s.calls += 1
        # due, and not while a commit runs with room left for this group (flush() would only return)
        if self.store.flush_due() and (self._flush_task is None or self.store.pending >= 2 * GROUP_ROWS):
            await self.flush()
            if self.s.fatal is not None and self.s.stop_reason is StopReason.STORE_ERROR:
                raise self.s.fatal
        else:
            # an adapter that answers without awaiting (``simulated``) must not keep the commit task, the
            # ticker and the other lanes from running; yielding after each of its attempts cost a loop cycle per
            # trial, so its lane yields every few (``YIELD_EVERY``)
            self._unyielded += 1
            if self._unyielded >= yield_every:
                self._unyielded = 0
                await asyncio.sleep(0)

    # ------------------------------------------------------------------ composite models

    def _context(self, lane: Lane, item: Item, reservation: Reservation) -> StageContext:
        return StageContext(trial_id=item.trial_id, trial_attempt=item.attempts + 1, lane=lane, reservation=reservation)

    def _stage_may_start(self, ctx: StageContext) -> str | None:
        """Why a composite may not start a new stage call now (None: it may)."""
        if self.s.stopped:
            return f"the run is stopping ({self.s.stop_reason.value})"
        res: Reservation = ctx.reservation
        # this run's reservation counts only beyond what its stages have already spent
        if not self.tracker.fits(-min(res.tokens, ctx.spent_tokens), -min(res.cost_usd, ctx.spent_cost_usd)):
            self._budget_stop()
            return "the budget is already spent"
        return None

    def _stage_ended(
        self, ctx: StageContext, stage: str, response: Response | None, error: BaseException | None
    ) -> None:
        """Spend a stage call's actual usage and react to its failure, the moment it ends (no await here)."""
        self.s.stage_calls += 1
        if response is not None:
            tokens = response_tokens(response)
            cost = response.cost_usd if response.cost_usd is not None else 0.0
            ctx.unknown_cost |= response.cost_usd is None
            ctx.spent_tokens += tokens
            ctx.spent_cost_usd += cost
            self.tracker.spend(tokens, cost)
            self.s.tokens += tokens
            self.s.cost_usd += cost
        if error is not None:
            self._react(ctx.lane, error)
        lane: Lane = ctx.lane
        self.emit(
            "stage",
            f"{lane.label}: stage {stage} of trial {ctx.trial_id[:12]} "
            f"{'ok' if error is None else 'failed: ' + str(error)}",
        )

    def _interrupted(self, item: Item) -> None:
        """A composite run cut short by a stop before a stage could start: store nothing, run it on resume."""
        if item.last_status is None and item.called:
            item.called = False
            self.s.called -= 1

    async def process(self, lane: Lane, items: list[Item]) -> None:
        """Call ``items`` (one request or one batch) until each is stored ok or out of attempts."""
        if not await self._prepare(items, lane.inline):
            return
        try:
            await self._process(lane, items)
        finally:
            for it in items:  # retries cut short by a stop: errored now, retried on resume
                if it.called and it.last_status is not None and not it.finished:
                    it.finished = True
                    self.s.errored[it.last_status] += 1
                    self.s.done += 1

    async def _process(self, lane: Lane, items: list[Item]) -> None:
        while items and not self.s.stopped:
            if lane.not_before:  # a Retry-After paused this adapter once: wait out what is left of it
                await self._wait_gate(lane)
            async with lane.semaphore:
                if self.s.stopped:
                    return
                if lane.not_before > self.clock.now():  # a Retry-After landed while we queued
                    continue
                items, res = self._reserve(items)
                if res is None:
                    return
                for it in items:
                    if not it.called:
                        it.called = True
                        self.s.called += 1
                ctx = self._context(lane, items[0], res) if lane.composite else None
                responses, error, started, ended = await self._call(lane, items, ctx)
                # settle the budget and decide a stop before another call can start (no await here);
                # a failure that was still paid for (a truncated answer) spends what it cost
                paid = getattr(error, "response", None) if error is not None and len(items) == 1 else None
                believed = self._settle(items, res, responses if paid is None else [paid], ctx)
                if paid is None and responses is not None and ctx is None:
                    responses = believed  # usage past the reserved worst case is clamped and flagged
                if ctx is not None:
                    self.s.stage_hits += ctx.hits
                    if ctx.store_error is not None:  # a stage call could not be stored: stop (STORE_ERROR)
                        raise ctx.store_error
                    error = composite_error(error)
                    if ctx.interrupted is not None and not isinstance(error, ModelCallError):
                        self._interrupted(items[0])
                        return
                if error is not None:
                    self._react(lane, error)
            if error is None:
                assert responses is not None
                await self._store_ok(lane, items, responses, started, ended, ctx)
                return
            items = await self._store_failure(lane, items, error, started, ended, ctx)

    def _settle(
        self,
        items: list[Item],
        reservation: Reservation,
        responses: list[Response] | None,
        ctx: StageContext | None = None,
    ) -> list[Response]:
        """Replace the call's reservation by what it actually spent (its estimate when no cost is reported);
        the responses as they are believed (``budget.bounded``: usage past a call's reserved worst case is
        clamped to it and flagged), which are what is stored.

        A composite's stages were spent as each ended; what is left is its reservation, and charging
        the shortfall up to its estimate if a stage reported no cost.
        """
        self.tracker.release(reservation)
        if ctx is not None:
            if ctx.unknown_cost:
                shortfall = max(0.0, reservation.cost_usd - ctx.spent_cost_usd)
                self.tracker.spend(0, shortfall)
                self.s.cost_usd += shortfall
            return list(responses or [])
        believed = []
        for it, resp in zip(items, responses or [], strict=False):
            # untrusted usage (clamped, or none reported) costs at least the call's estimate, and no call
            # more than its worst case when the estimate is one
            estimate = it.estimate if it.estimate is not None else self.tracker.estimate(it.planned)
            resp = bounded(resp, estimate)
            spent = self.tracker.settle(resp, estimate)
            self.s.tokens += spent.tokens
            self.s.cost_usd += spent.cost_usd
            believed.append(resp)
        return believed

    def _react(self, lane: Lane, error: BaseException) -> None:
        """Pause the adapter for a Retry-After; stop the run on QUOTA, AUTH or an unclassified exception."""
        if isinstance(error, ModelCallError) and error.kind is ErrorKind.RATE_LIMIT and error.retry_after:
            lane.not_before = max(lane.not_before, self.clock.now() + error.retry_after)
        if not isinstance(error, ModelCallError):
            self.stop(
                StopReason.ADAPTER_ERROR,
                f"{lane.label}: adapter raised unclassified {type(error).__name__}: {error}",
                fatal=error,
            )
        elif self.policy.decide(error.kind) is Decision.STOP_RUN:
            reason = StopReason.QUOTA if error.kind is ErrorKind.QUOTA else StopReason.AUTH
            fix = "add credit or raise the quota" if error.kind is ErrorKind.QUOTA else "check the API key"
            self.stop(
                reason,
                f"{lane.label} answered {error.kind.value}: {error.message}. No new calls were "
                f"made; {fix}, then resume with the same command",
            )

    async def _store_ok(
        self,
        lane: Lane,
        items: list[Item],
        responses: list[Response],
        started: float,
        ended: float,
        ctx: StageContext | None = None,
    ) -> None:
        for it, resp in zip(items, responses, strict=True):
            assert it.request is not None
            idx, ts = it.request.sent_frames()
            if resp.frames_sent is not None:  # the adapter knows the frames the service used
                by_index = dict(zip(idx, ts, strict=False))
                idx = list(resp.frames_sent)
                ts = [by_index[i] for i in idx] if all(i in by_index for i in idx) else []  # [] = times unknown
            it.attempts += 1
            await self._store(
                ok_attempt(it.trial_id, it.attempts, resp, idx, ts, started, ended), ctx, lane.yield_every
            )
            it.finished = True
            self.s.ok += 1
            self.s.done += 1
            self.emit("attempt")

    async def _store_failure(
        self,
        lane: Lane,
        items: list[Item],
        error: BaseException,
        started: float,
        ended: float,
        ctx: StageContext | None = None,
    ) -> list[Item]:
        """Store the failed attempt of every item; return the items to retry (after sleeping)."""
        kind = error.kind if isinstance(error, ModelCallError) else None
        message = (
            error.message
            if isinstance(error, ModelCallError)
            else f"adapter raised unclassified {type(error).__name__}: {error}"
        )
        if ctx is not None and (stage := ctx.failed_stage.get(id(error))) is not None:
            message = f"stage {stage}: {message}"
        status = status_for(kind)
        decision = self.policy.decide(kind)
        retry: list[Item] = []
        for it in items:
            assert it.request is not None
            idx, ts = it.request.sent_frames()
            it.attempts += 1
            paid = getattr(error, "response", None) if len(items) == 1 else None  # e.g. a truncated answer
            await self._store(
                Attempt(
                    trial_id=it.trial_id,
                    attempt=it.attempts,
                    status=status,
                    error_kind=kind,
                    error_message=message,
                    response=paid,
                    frame_indices=tuple(idx),
                    frame_times=tuple(ts),
                    started_at=started,
                    ended_at=ended,
                ),
                ctx,
            )
            it.last_status = status.value
            self.s.failed_ids.add(it.trial_id)
            self.s.failed_attempts[status.value] += 1
            if decision is Decision.RETRY and it.attempts < it.limit:
                retry.append(it)
            else:
                it.finished = True
                self.s.errored[status.value] += 1
                self.s.done += 1
            self.emit("attempt", f"{lane.label}: {message}")
        if not retry or self.s.stopped:
            return []
        retry_after = error.retry_after if isinstance(error, ModelCallError) else None
        await self.clock.sleep(
            self.policy.delay(min(it.attempts for it in retry), retry_after=retry_after, key=retry[0].trial_id)
        )
        return retry
