"""The LangGraph side of bench/peers: one node that asks an in-process fake chat model.

The model streams the same twenty words as Folio's mock model server (one delta per word), with
no network and no API key, so both servers stream a comparable answer.
"""

from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import START, MessagesState, StateGraph

ANSWER = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)


def pieces() -> list[str]:
    """The answer in word-sized pieces, as Folio's mock model streams it."""
    words = ANSWER.split(" ")
    return [word + " " for word in words[:-1]] + [words[-1]]


class TwentyWords(BaseChatModel):
    """A fake chat model: every answer is ANSWER, streamed one word per chunk."""

    @property
    def _llm_type(self) -> str:
        return "twenty-words"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=ANSWER))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for piece in pieces():
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk

    async def _astream(self, messages: list[BaseMessage], stop: Any = None,
                       run_manager: Any = None, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        for piece in pieces():
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                await run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


model = TwentyWords()


async def agent(state: MessagesState) -> dict:
    """Answers the conversation so far."""
    return {"messages": [await model.ainvoke(state["messages"])]}


graph = StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent").compile()
