"""``object-centric:...``: the framework as a composite model; every model stage is a stored, cached stage call.

Per trial (one question about one video):

1. E, ``extract`` (one stage call per chunk; query-agnostic: the sub-request holds the chunk's frames,
   their timestamps and the schema prompt, nothing of the question, so the calls of one video are
   identical across its questions and hit the store after the first -- built once per video);
2. A, the aggregator (no call); then the shuffled-order ablation, if asked;
3. R, ``retrieve``: a stage call to the backbone (``retrieval=model``) or a local rule (no call);
4. G, ``answer``: the retrieved trajectories, ``answer_frames`` frames uniform over the whole video
   (the same for every question) and the suite's prompt.

Ablations that need a model: ``aggregator=summarise`` replaces step 2 by the stored stage ``summarise``
(``framework.summarise``); ``states=captions`` (and ``states=prose``, the paper's variants B/C) replaces steps
1-2 by a text per chunk and retrieval over those texts (``framework.captions``).

The request must carry the video (a native condition, e.g. ``native@1``): the framework samples
its own frames, whatever rate the condition names. The final text is a one-line header
(``[object-centric] ...``: trajectories, invalid chunks, retrieved trajectories with their
attributes -- what the report's retrieval precision/recall reads) followed by G's reply. The trial's
usage and cost are R's and G's; the one-off extraction (and summarise) cost is in the stage-call store,
counted once per video; the report's ``stage_usage`` and ``budget`` read it from there (``framework.budget``).
"""

from __future__ import annotations

import asyncio

import av

from vidaudit.sdk import (
    Capabilities,
    ConfigError,
    DataError,
    ErrorKind,
    FrameCache,
    ImagePart,
    ModelAdapter,
    ModelCallError,
    ModelSpec,
    Part,
    Request,
    Response,
    StageCall,
    TextPart,
    VideoPart,
    combine_stages,
    header_size,
    make_adapter,
)
from vidaudit.suites.faithful.framework import captions as capt
from vidaudit.suites.faithful.framework import memory, retrieval, summarise
from vidaudit.suites.faithful.framework.aggregator import AggregatorSettings, aggregate
from vidaudit.suites.faithful.framework.answerer_program import ProgramAnswerer
from vidaudit.suites.faithful.framework.chunks import Chunk, plan_chunks, uniform_frames
from vidaudit.suites.faithful.framework.extractor_offline import OfflineExtractor
from vidaudit.suites.faithful.framework.query import question_of
from vidaudit.suites.faithful.framework.schema import AnswerTooLarge, InvalidExtraction, extraction_prompt, parse_chunk
from vidaudit.suites.faithful.framework.spec import FrameworkOptions, parse_spec
from vidaudit.suites.faithful.framework.vocabulary import synthetic_trajectory, words

HEADER_TAG = "[object-centric]"


def frame_size(path: str, stream: int | None = None) -> tuple[int, int] | None:
    """The displayed width and height of the frames the framework will decode (the stream the request names, or
    the one ffmpeg shows; square pixels), from the header, without decoding a frame (None when the file cannot
    be opened: decoding it says why)."""
    try:
        return header_size(path, stream)
    except (DataError, av.error.FFmpegError, OSError):
        return None


def _descriptor(t: dict) -> str:
    a = t["attributes"]
    if not synthetic_trajectory(t):  # open vocabulary: the category (and a number), never free text with commas
        num = next((v for v in a.values() if isinstance(v, int) and not isinstance(v, bool)), None)
        return f"{t['id']}={'-'.join(words(t['category'])) or 'object'}" + (f"#{num}" if num is not None else "")
    if t["category"] == "item":
        return f"{t['id']}=item/{a.get('colour')}"
    return f"{t['id']}={a.get('colour')}/{a.get('shape')}/{a.get('number')}"


class ObjectCentricAdapter:
    composite = True

    def __init__(self, spec: ModelSpec, **_: object) -> None:
        self.spec = spec
        self.options: FrameworkOptions = parse_spec(spec)
        o = self.options
        self.aggregator = AggregatorSettings(
            dt_max=o.dt_max,
            tau_conf=o.tau,
            matching=o.matching,  # type: ignore[arg-type]
            linking=o.linking == "on",
        )
        self.extractor: ModelAdapter
        self.answerer: ModelAdapter
        self._owned: list[ModelAdapter]
        if o.offline:
            self.extractor = OfflineExtractor(ModelSpec(provider="object-centric", name="offline-extractor"))
            self.answerer = ProgramAnswerer(ModelSpec(provider="object-centric", name="program-answerer"))
            self.retriever = None
            self._owned = [self.extractor, self.answerer]
        else:
            made: dict[str, ModelAdapter] = {}

            def adapter_for(stage: str):
                text = o.stage_spec(stage)
                if text not in made:
                    m = ModelSpec.parse(text).model_copy(update={"settings": spec.settings})
                    if m.provider == "object-centric":
                        raise ConfigError(f"{spec.label}: the backbone cannot itself be object-centric")
                    made[text] = make_adapter(m)
                return made[text]

            self.extractor = adapter_for("extract")
            self.answerer = adapter_for("answer")
            self.retriever = adapter_for("retrieve") if o.retrieval == "model" else None
            self._owned = list(made.values())
        # images=False: it samples its own frames from the video, so the plan refuses frames@K up front
        self.capabilities = Capabilities(
            native_video=True, images=False, concurrency=4, local=o.offline, synthetic=o.offline
        )
        self.frames = FrameCache(max_bytes=512 << 20)
        self._sizes: dict[tuple[str, int | None], tuple[int, int] | None] = {}

    async def aclose(self) -> None:
        for a in self._owned:
            await a.aclose()

    def _too_large(self, e: AnswerTooLarge) -> ModelCallError:
        """The trial's error for an answer past a cap: ``too_large`` (the stage's answer is stored and would be
        read again the same way, so not retried), naming the option to raise."""
        return ModelCallError(
            ErrorKind.TOO_LARGE,
            f"{self.spec.label}: {e}; nothing of it was used. If answers "
            f"really are this large, raise the cap: object-centric:{e.option}=N,...",
        )

    # ------------------------------------------------------------------ stages

    def _images(self, video: VideoPart, indices: tuple[int, ...], times: tuple[float, ...]) -> list[Part]:
        imgs = self.frames.get(video.path, video.sha256, list(indices), video.stream)
        parts: list[Part] = []
        for i, t, img in zip(indices, times, imgs, strict=True):
            parts.append(TextPart(f"t={t:.2f}s"))
            parts.append(ImagePart(image=img, frame_index=i, t=t))
        return parts

    def schema_for(self, request: Request) -> str:
        """The extraction schema: the spec's ``schema=``, else the dataset's (the request's public metadata,
        from the samples: ``import strand`` data and open world records say ``open``), else synthetic."""
        return self.options.schema or str(request.metadata.get("schema") or "synthetic")

    async def _check_pixels(self, video: VideoPart) -> None:
        """``too_large`` before any frame is decoded when the video's frames pass ``max_frame_pixels`` (a chunk
        decodes ``chunk_frames`` of them at full size at once)."""
        key = (video.sha256 or video.path, video.stream)
        if key not in self._sizes:
            self._sizes[key] = await asyncio.to_thread(frame_size, video.path, video.stream)
        size = self._sizes[key]
        cap = self.options.max_frame_pixels
        if size is not None and size[0] * size[1] > cap:
            w, h = size
            raise ModelCallError(
                ErrorKind.TOO_LARGE,
                (
                    f"{self.spec.label}: the video's frames are {w}x{h} ({w * h:,} pixels), over max_frame_pixels="
                    f"{cap:,}; no frame was decoded. Downscale the video, or raise the cap: "
                    "object-centric:max_frame_pixels=N,... (a chunk holds chunk_frames frames of 3 bytes a pixel)"
                ),
            )

    async def _chunk_call(
        self, request: Request, video: VideoPart, ch: Chunk, call: StageCall, template: str, key: str, version: object
    ) -> Response:
        """Stage ``extract`` on one chunk: its frames and ``template`` filled with their count and span; the
        request's metadata names the prompt's ``key: version``, the video and the chunk."""
        parts = await asyncio.to_thread(self._images, video, ch.frames, ch.times)
        prompt = template.format(n=len(ch.frames), t0=ch.t_start, t1=ch.t_end)
        sub = Request(
            trial_id=request.trial_id,
            parts=(*parts, TextPart(prompt)),
            settings=self.spec.settings,
            metadata={
                "stage": "extract",
                key: version,
                "video": video.sha256,
                "chunk": [ch.index, ch.t_start, ch.t_end],
            },
        )
        return await call("extract", self.extractor, sub)

    async def _extract(self, request: Request, video: VideoPart, ch: Chunk, call: StageCall):
        schema = self.schema_for(request)
        template, version = extraction_prompt(schema)
        r = await self._chunk_call(request, video, ch, call, template, "schema_version", version)
        try:
            return ch, r, parse_chunk(r.text, ch.t_start, ch.t_end, schema, self.options.caps), None
        except InvalidExtraction as e:
            return ch, r, None, str(e)
        except AnswerTooLarge as e:
            raise self._too_large(e) from None

    async def run(self, request: Request, call: StageCall) -> Response:
        o = self.options
        video = next((p for p in request.parts if isinstance(p, VideoPart)), None)
        if video is None:
            raise ModelCallError(
                ErrorKind.UNSUPPORTED,
                f"{self.spec.label} samples its own frames from the video: "
                "run it under a native condition (e.g. --condition native@1)",
            )
        await self._check_pixels(video)
        prompt = next((p.text for p in reversed(request.parts) if isinstance(p, TextPart)), "")
        try:
            question = question_of(prompt)
        except ValueError:
            question = prompt
        chunk_s = video.duration_s / o.chunks if o.chunks and video.duration_s > 0 else o.chunk_s
        chunks = plan_chunks(video.duration_s, video.source_fps, video.n_frames, chunk_s, o.chunk_frames)
        if o.states in ("captions", "prose"):
            return await self._run_captions(request, video, prompt, question, chunks, call)
        done = await asyncio.gather(*(self._extract(request, video, ch, call) for ch in chunks))
        valid = [(ch.index, ex) for ch, _, ex, _ in done if ex is not None]
        invalid = [(ch.index, ch.t_start, ch.t_end, why) for ch, _, _, why in done if why is not None]
        notes: tuple[str, ...] = ()
        summary_invalid = None
        if o.aggregator == "summarise":
            trajs, summary_invalid = await self._summarise(request, video, done, call)
            if summary_invalid is not None:
                notes = (f"the summarise stage's reply was invalid ({summary_invalid}): no trajectories",)
        else:
            trajs = [t.as_json() for t in aggregate(valid, self.aggregator)]
        if o.order == "shuffled":
            trajs = memory.shuffle_times(trajs)
        ids, rnote, stages = await self._retrieve(retrieval, question, trajs, request, call)
        note = "summarise_invalid" if summary_invalid is not None else rnote
        keep = set(ids)
        chosen = [t for t in trajs if t["id"] in keep]
        dropped = ""
        if o.drop_one == "on":  # D.6's atomic intervention: the first retrieved trajectory the question names
            named = retrieval.lexical(question, chosen, request.metadata.get("vocabulary"))
            dropped = ",".join(_descriptor(t) for t in chosen if named and t["id"] == named[0]) or "-"
            chosen = [t for t in chosen if not named or t["id"] != named[0]]
        if o.memory_tokens:
            chosen, cut = memory.truncate(chosen, invalid, notes, question, o.memory_tokens)
            if cut:
                notes = (
                    *notes,
                    f"memory truncated to {o.memory_tokens} tokens (token-matched budget): {cut} states dropped",
                )
        memory_text = memory.render(chosen, invalid, notes)
        g = await self._answer(request, video, memory_text, prompt, call)
        stages.append(g)
        # memory=N: the estimated tokens of the memory G read (0: frames only), what a token-matched cap is
        # computed from (budget.token_match)
        sent = memory.tokens_of(memory_text) if o.answer_input != "frames" else 0
        head = (
            f"{HEADER_TAG} chunks={len(chunks)} invalid_chunks={len(invalid)} trajectories={len(trajs)} "
            f"retrieved={','.join(_descriptor(t) for t in chosen) or '-'} memory={sent}"
            + (f" dropped={dropped}" if dropped else "")
            + (f" note={note}" if note else "")
        )
        return combine_stages(f"{head}\n{g.text}", stages)

    # ------------------------------------------------------------------ ablations needing a model

    async def _answer(self, request: Request, video: VideoPart, memory_text: str, prompt: str, call: StageCall):
        """The answer stage: the memory's text and/or uniform frames (``answer_input``), then the question."""
        o = self.options
        parts: list[Part] = []
        if o.answer_input != "frames":
            parts.append(TextPart(memory_text))
        if o.answer_input != "text" and o.answer_frames > 0:
            idx, times = uniform_frames(video.source_fps, video.n_frames, o.answer_frames)
            parts += await asyncio.to_thread(self._images, video, idx, times)
        parts.append(TextPart(prompt))
        meta: dict = {"stage": "answer"}
        if request.metadata.get("vocabulary"):  # the dataset's words, for the program answerer (open data only)
            meta["vocabulary"] = request.metadata["vocabulary"]
        sub = Request(
            trial_id=request.trial_id,
            parts=tuple(parts),
            system=request.system,
            settings=self.spec.settings,
            metadata=meta,
        )
        return await call("answer", self.answerer, sub)

    async def _retrieve(
        self, lib, question: str, items: list[dict], request: Request, call: StageCall
    ) -> tuple[list[str], str | None, list[Response]]:
        """Retrieval R over trajectories (``lib`` = ``retrieval``) or captions (``captions``): all, lexical,
        random top-k (k = what lexical would keep), or a model call (stage ``retrieve``)."""
        o = self.options
        if o.retrieval == "all":
            return [t["id"] for t in items], None, []
        vocab = request.metadata.get("vocabulary")
        if o.retrieval in ("lexical", "random"):
            kept = lib.lexical(question, items, vocab) if lib is retrieval else lib.lexical(question, items)
            if o.retrieval == "lexical":
                return kept, None, []
            return lib.random_k(question, items, len(kept)), None, []
        sub = Request(
            trial_id=request.trial_id,
            parts=(TextPart(lib.model_prompt(question, items)),),
            settings=self.spec.settings,
            metadata={"stage": "retrieve"},
        )
        r = await call("retrieve", self.retriever, sub)  # type: ignore[arg-type]
        ids, note = retrieval.parse_model_reply(r.text, items)
        return ids, note, [r]

    async def _summarise(
        self, request: Request, video: VideoPart, done: list, call: StageCall
    ) -> tuple[list[dict], str | None]:
        """The LLM-summarise aggregator: (trajectories, None), or ([], why) when the reply is invalid."""
        valid = [(ch.index, ch.t_start, ch.t_end, ex) for ch, _, ex, _ in done if ex is not None]
        schema = self.schema_for(request)
        sub = Request(
            trial_id=request.trial_id,
            parts=(TextPart(summarise.prompt(valid, schema)),),
            settings=self.spec.settings,
            metadata={"stage": "summarise", "summarise_version": summarise.SUMMARISE_VERSION, "video": video.sha256},
        )
        r = await call("summarise", self.answerer, sub)
        try:
            return summarise.parse_trajectories(
                r.text, video.duration_s, schema, self.options.caps, chunks=len(done)
            ), None
        except InvalidExtraction as e:
            return [], str(e)
        except AnswerTooLarge as e:
            raise self._too_large(e) from None

    async def _caption(self, request: Request, video: VideoPart, ch: Chunk, call: StageCall):
        template, key, version = capt.prompt_for(self.options.states)
        r = await self._chunk_call(request, video, ch, call, template, key, version)
        return ch, r.text.strip()

    async def _run_captions(
        self, request: Request, video: VideoPart, prompt: str, question: str, chunks: list[Chunk], call: StageCall
    ) -> Response:
        """The dense-captions ablation: a caption per chunk (stage ``extract``), retrieval over captions, G."""
        done = await asyncio.gather(*(self._caption(request, video, ch, call) for ch in chunks))
        caps = [
            {"id": f"C{ch.index + 1}", "t": [round(ch.t_start, 2), round(ch.t_end, 2)], "text": text}
            for ch, text in done
            if text
        ]
        invalid = [(ch.index, ch.t_start, ch.t_end, "empty caption") for ch, text in done if not text]
        ids, note, stages = await self._retrieve(capt, question, caps, request, call)
        keep = set(ids)
        chosen = [c for c in caps if c["id"] in keep]
        g = await self._answer(request, video, capt.render(chosen, invalid), prompt, call)
        stages.append(g)
        head = (
            f"{HEADER_TAG} chunks={len(chunks)} invalid_chunks={len(invalid)} captions={len(caps)} "
            f"retrieved_captions={','.join(c['id'] for c in chosen) or '-'}" + (f" note={note}" if note else "")
        )
        return combine_stages(f"{head}\n{g.text}", stages)
