"""Checkpoint, restore and fork a Seahaven episode over /ws.

Run `make run` (the company world), then: python3 client.py [ws://localhost:8000/ws]
Needs the `websockets` package (any version from 10).
"""
import asyncio
import json
import sys

import websockets

URL = sys.argv[1] if len(sys.argv) > 1 else "ws://localhost:8000/ws"


class Session:
    """One /ws connection: one episode at a time."""

    def __init__(self, ws):
        self.ws = ws

    async def send(self, type_, data=None):
        msg = {"type": type_}
        if data is not None:
            msg["data"] = data
        await self.ws.send(json.dumps(msg))
        reply = json.loads(await self.ws.recv())
        if reply["type"] == "error":
            raise RuntimeError(reply["data"])
        return reply["data"]

    async def call(self, tool, request_id=None, **arguments):
        action = {"type": "call_tool", "tool_name": tool, "arguments": arguments}
        if request_id:
            action["request_id"] = request_id
        obs = await self.send("step", action)
        return obs["observation"], obs["reward"], obs["done"]


async def main():
    # 1. Preemption recovery: checkpoint mid-episode, lose the session,
    #    restore on a new connection (any replica sharing --checkpoints),
    #    fence the old attempt, and retry the step whose reply was lost.
    async with websockets.connect(URL) as a:
        s = Session(a)
        await s.send("reset", {"task": "hire_liskov", "seed": 7})
        await s.call("hire", name="Barbara Liskov", role="engineer")
        ck = await s.send("checkpoint")
        print("checkpoint", ck["checkpoint_id"], "revision", ck["revision"])
        _, reward, _ = await s.call("chat_send_message", request_id="r-2",
                                    channel="general", text="hello", author="ops")
        print("before the loss: reward", reward)
    async with websockets.connect(URL) as b:
        s = Session(b)
        await s.send("reset", {"checkpoint": ck["checkpoint_id"], "replaces": ck["attempt"]})
        state = await s.send("state")
        print("restored: step_count", state["step_count"], "episode", state["episode_id"] == ck["episode_id"])
        _, reward, _ = await s.call("chat_send_message", request_id="r-2",
                                    channel="general", text="hello", author="ops")
        print("after the restore: reward", reward)

    # 2. GRPO from a mid-state: one checkpoint, a group of rollouts.
    group = []
    for k in range(4):
        ws = await websockets.connect(URL)
        s = Session(ws)
        await s.send("reset", {"checkpoint": ck["checkpoint_id"]})
        channel = "engineering" if k % 2 == 0 else "general"
        _, reward, done = await s.call("chat_send_message", channel=channel,
                                       text="Welcome, Barbara Liskov!", author="ops")
        group.append((channel, reward, done))
        await ws.close()
    print("group:", group)

    # 3. Tree search: checkpoint each node worth expanding, branch from it.
    async with websockets.connect(URL) as c:
        s = Session(c)
        await s.send("reset", {"checkpoint": ck["checkpoint_id"]})
        await s.call("list_staff")
        node = await s.send("checkpoint")
        for text in ["Welcome!", "Welcome, Barbara Liskov!"]:
            await s.send("reset", {"checkpoint": node["checkpoint_id"]})
            _, reward, done = await s.call("chat_send_message", channel="engineering", text=text, author="ops")
            print("branch", repr(text), "reward", reward, "done", done)


asyncio.run(main())
