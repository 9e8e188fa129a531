#!/usr/bin/python3
"""Encodes ScheduleCommands as an outside producer would: the schema and its id come from the
schema registry (latest version under the subject), the bytes from Apache Avro's own Python
library, framed in the Confluent wire format (magic 0, 4-byte schema id, Avro binary).

stdin: {"registry": url, "subject": name, "commands": [{"file": path, "command": {...}}]}, with
timestamps as epoch milliseconds; each command's bytes are written to its file.
"""
import datetime
import io
import json
import struct
import sys
import urllib.request

import avro.io
import avro.schema

TIMESTAMPS = ("at", "anchor", "start_at", "end_at")


def instant(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def with_instants(command):
    command = dict(command)
    command["issued_at"] = instant(command["issued_at"])
    job = command.get("job")
    if job is not None:
        schedule = dict(job["schedule"])
        for name in TIMESTAMPS:
            if schedule.get(name) is not None:
                schedule[name] = instant(schedule[name])
        command["job"] = dict(job, schedule=schedule)
    return command


def main():
    spec = json.load(sys.stdin)
    url = f"{spec['registry']}/subjects/{spec['subject']}/versions/latest"
    with urllib.request.urlopen(url, timeout=10) as res:
        latest = json.load(res)
    schema = avro.schema.parse(latest["schema"])
    writer = avro.io.DatumWriter(schema)
    for item in spec["commands"]:
        buf = io.BytesIO()
        buf.write(struct.pack(">bI", 0, latest["id"]))
        writer.write(with_instants(item["command"]), avro.io.BinaryEncoder(buf))
        with open(item["file"], "wb") as f:
            f.write(buf.getvalue())
    print(json.dumps({"schema_id": latest["id"], "encoded": len(spec["commands"])}))


if __name__ == "__main__":
    main()
