"""``occ chat``: talk to a running Agent through OCC (the console's Chat tab, ``POST …/chat``).

With a message, one turn: the reply streams to stdout. Without, a conversation: each line read
from stdin is a turn (a prompt on a terminal), the turns so far go with it, and an empty line
or end of input (Ctrl-D) ends it. OCC keeps none of the text; it audits the conversation once.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from occ_cli import output
from occ_cli.client import CliError, Exit, OccClient
from occ_cli.commands.agents import AgentArgument
from occ_cli.common import JsonOption, NamespaceOption, agent_of, json_wanted, namespace_of, settings

# OCC's bounds on a turn (occ.commands.chat): the oldest turns are dropped to stay within them.
MESSAGES_MAX = 100
BODY_CHARS_MAX = 400_000
PROMPT = "you> "


@dataclass
class Conversation:
    client: OccClient
    path: str
    wait: float
    id: str | None = None
    messages: list[dict[str, str]] = field(default_factory=list)

    def turn(self, text: str, *, echo: bool) -> str:
        """The reply to ``text`` (printed as it streams when ``echo``); the turn joins the conversation."""
        asked = [*self.messages, {"role": "user", "content": text}]
        while len(asked) > MESSAGES_MAX or (len(asked) > 1 and len(json.dumps(asked)) > BODY_CHARS_MAX):
            asked = asked[2:]
        body: dict[str, Any] = {"messages": asked}
        if self.id is not None:
            body["conversationId"] = self.id
        reply: list[str] = []
        for event in self.client.events(f"{self.path}/chat", body, read_timeout=self.wait):
            data = json.loads(event.data or "{}")
            if event.event == "conversation":
                self.id = data["id"]
            elif event.event == "token":
                reply.append(data["text"])
                if echo:
                    sys.stdout.write(data["text"])
                    sys.stdout.flush()
            elif event.event == "error":
                raise CliError(data.get("message") or "The conversation failed.", Exit.FAILED,
                               code=data.get("code") or "CHAT_FAILED")
        text_of_reply = "".join(reply)
        self.messages = [*asked, {"role": "assistant", "content": text_of_reply}]
        return text_of_reply


def chat(
    agent: AgentArgument, namespace: NamespaceOption,
    message: Annotated[str | None, typer.Argument(help="One message; without it, read a conversation from "
                                                       "stdin, a line a turn.")] = None,
    wait: Annotated[float, typer.Option(min=1.0, help="Seconds to wait for the next word of a reply.")] = 300.0,
    as_json: JsonOption = False,
) -> None:
    """Talk to a running Agent (needs invoke on it; the conversation is audited, its text is not kept)."""
    client = settings.client()
    namespace_id = namespace_of(client, namespace)["id"]
    conversation = Conversation(client, f"/namespaces/{namespace_id}/agents/"
                                        f"{agent_of(client, namespace_id, agent)['id']}", wait)
    as_json = json_wanted(as_json)
    if message is not None:
        return _answer(conversation, message, as_json=as_json)
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            output.stderr.print(PROMPT, end="", highlight=False, markup=False)
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            line = ""
        if not line.strip():
            return None
        try:
            _answer(conversation, line.strip(), as_json=as_json)
        except CliError as exc:
            if exc.exit_code != Exit.FAILED:  # OCC refused: no later turn would fare better
                raise
            output.report_error(exc, as_json=as_json)


def _answer(conversation: Conversation, text: str, *, as_json: bool) -> None:
    reply = conversation.turn(text, echo=not as_json)
    if as_json:
        sys.stdout.write(json.dumps({"conversationId": conversation.id, "reply": reply}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        sys.stdout.write("\n")
        sys.stdout.flush()
