"""A gRPC client that knows nothing of Tickwork: it learns the API from server reflection.

Standard parts only (Debian's python3-grpcio, python3-protobuf, protoc and grpc-proto): the
reflection protocol's messages are compiled by protoc from grpc-proto's own copy, the files the
server reflects are loaded into a fresh google.protobuf DescriptorPool (the C++ loader, which
rejects malformed descriptors), and request messages are built from those descriptors and sent
through a generic channel. Prints one JSON object of what it saw; the jest test asserts on it.

Usage: reflection_client.py ADDRESS TOKEN WORKDIR COMMITTED_SET
(COMMITTED_SET, the descriptor set protoc wrote, is only compared with what reflection sent.)
"""

import importlib.util
import json
import subprocess
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

GRPC_PROTO = "/usr/share/grpc-proto"
address, token, workdir, committed_set = sys.argv[1:5]


def reflection_module(version):
    """The reflection protocol's messages, compiled now by protoc from grpc-proto."""
    proto = f"grpc/reflection/{version}/reflection.proto"
    subprocess.run(["protoc", f"-I{GRPC_PROTO}", f"--python_out={workdir}", proto], check=True)
    spec = importlib.util.spec_from_file_location(
        f"reflection_{version}_pb2", f"{workdir}/grpc/reflection/{version}/reflection_pb2.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


channel = grpc.insecure_channel(address)


def reflect(version, pb, requests):
    """Sends the requests on one ServerReflectionInfo stream; returns the responses in order."""
    call = channel.stream_stream(
        f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString,
    )
    return list(call(iter([pb.ServerReflectionRequest(**r) for r in requests]), timeout=20))


def files_of(response):
    return [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in response.file_descriptor_response.file_descriptor_proto
    ]


def error_of(response):
    which = response.WhichOneof("message_response")
    if which != "error_response":
        return {"message_response": which}
    return {"code": response.error_response.error_code, "message": response.error_response.error_message}


def load_pool(responses):
    """Adds every reflected file to a fresh pool, dependencies first, as a reflection client must."""
    protos = {}
    for response in responses:
        for raw in response.file_descriptor_response.file_descriptor_proto:
            protos.setdefault(descriptor_pb2.FileDescriptorProto.FromString(raw).name, raw)
    pool = descriptor_pool.DescriptorPool()
    added = set()

    def add(name):
        if name in added:
            return
        added.add(name)
        proto = descriptor_pb2.FileDescriptorProto.FromString(protos[name])
        for dep in proto.dependency:
            add(dep)
        pool.AddSerializedFile(protos[name])  # raises TypeError on a descriptor protoc would not write

    for name in protos:
        add(name)
    return pool


def message_class(pool, name):
    descriptor = pool.FindMessageTypeByName(name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def unary(pool, service, method, request, metadata=()):
    """Calls a unary RPC built entirely from reflected descriptors; returns the answer as JSON."""
    descriptor = pool.FindServiceByName(service).FindMethodByName(method)
    request_class = message_class(pool, descriptor.input_type.full_name)
    response_class = message_class(pool, descriptor.output_type.full_name)
    call = channel.unary_unary(
        f"/{service}/{method}",
        request_serializer=request_class.SerializeToString,
        response_deserializer=response_class.FromString,
    )
    answer = call(json_format.ParseDict(request, request_class()), metadata=metadata, timeout=20)
    return json_format.MessageToDict(answer, preserving_proto_field_name=True)


out = {}
v1 = reflection_module("v1")
v1alpha = reflection_module("v1alpha")

listed, by_name, by_symbol, by_method, by_entry, missing_file, missing_symbol, extension, numbers = reflect(
    "v1",
    v1,
    [
        {"list_services": ""},
        {"file_by_filename": "tickwork/admin/v1/admin.proto"},
        {"file_containing_symbol": "tickwork.admin.v1.SchedulerAdmin"},
        {"file_containing_symbol": "tickwork.admin.v1.SchedulerAdmin.GetJob"},
        {"file_containing_symbol": "tickwork.admin.v1.Job.LabelsEntry"},
        {"file_by_filename": "no/such.proto"},
        {"file_containing_symbol": "no.such.Symbol"},
        {"file_containing_extension": {"containing_type": "tickwork.admin.v1.Job", "extension_number": 100}},
        {"all_extension_numbers_of_type": "tickwork.admin.v1.Job"},
    ],
)
out["services"] = sorted(s.name for s in listed.list_services_response.service)
out["by_filename"] = [{"name": f.name, "dependency": list(f.dependency)} for f in files_of(by_name)]
with open(committed_set, "rb") as f:
    committed = {p.name: p.SerializeToString() for p in descriptor_pb2.FileDescriptorSet.FromString(f.read()).file}
out["by_filename_as_committed"] = [
    raw == committed[descriptor_pb2.FileDescriptorProto.FromString(raw).name]
    for raw in by_name.file_descriptor_response.file_descriptor_proto
]
out["by_symbol"] = [f.name for f in files_of(by_symbol)]
out["by_method"] = [f.name for f in files_of(by_method)][:1]
out["by_entry"] = [f.name for f in files_of(by_entry)][:1]
out["missing_file"] = error_of(missing_file)
out["missing_symbol"] = error_of(missing_symbol)
out["extension"] = error_of(extension)
out["extension_numbers"] = {
    "base_type_name": numbers.all_extension_numbers_response.base_type_name,
    "extension_number": list(numbers.all_extension_numbers_response.extension_number),
}

pool = load_pool([by_symbol])
job = pool.FindMessageTypeByName("tickwork.admin.v1.Job")
labels_entry = job.fields_by_name["labels"].message_type
interval = pool.FindMessageTypeByName("tickwork.admin.v1.IntervalSchedule")
struct = pool.FindMessageTypeByName("google.protobuf.Struct")
out["descriptors"] = {
    "labels_entry": labels_entry.full_name,
    "labels_entry_is_map_entry": labels_entry.GetOptions().map_entry,
    "struct_fields_entry": struct.fields_by_name["fields"].message_type.full_name,
    "max_fires_has_presence": interval.fields_by_name["max_fires"].has_presence,
    "max_fires_oneof": interval.fields_by_name["max_fires"].containing_oneof.name,
    "get_job_comment_kept": bool(by_symbol.file_descriptor_response.file_descriptor_proto)
    and any(
        "most recent run" in loc.leading_comments
        for f in files_of(by_symbol)
        if f.name == "tickwork/admin/v1/admin.proto"
        for loc in f.source_code_info.location
    ),
}

auth = (("authorization", f"Bearer {token}"),)
admin = "tickwork.admin.v1.SchedulerAdmin"
job_request = {
    "job_id": "reflected-1",
    "schedule": {"interval": {"every_ms": "3600000", "max_fires": "3"}},
    "target": {"webhook": {"url": "https://example.com/hook", "method": "HTTP_METHOD_POST"}},
    "payload": {"report": "daily", "n": 2, "tags": ["a", "b"]},
    "labels": {"team": "reflection"},
}
out["created"] = unary(pool, admin, "CreateJob", {"job": job_request}, auth)
out["got"] = unary(pool, admin, "GetJob", {"job_id": "reflected-1"}, auth)
out["listed"] = unary(pool, admin, "ListJobs", {"labels": {"team": "reflection"}}, auth)

# protoc (the C++ loader) builds the same reflected files, encodes a request from them in text
# format, and decodes the API's answer: what grpcurl does, with the reference implementation.
reflected_set = f"{workdir}/reflected.binpb"
with open(reflected_set, "wb") as f:
    f.write(descriptor_pb2.FileDescriptorSet(file=files_of(by_symbol)).SerializeToString())


def protoc_codec(mode, type_name, data):
    return subprocess.run(
        ["protoc", f"--descriptor_set_in={reflected_set}", f"--{mode}={type_name}", "tickwork/admin/v1/admin.proto"],
        input=data,
        capture_output=True,
        check=True,
    ).stdout


raw_get = channel.unary_unary(f"/{admin}/GetJob")  # bytes in, bytes out
encoded = protoc_codec("encode", "tickwork.admin.v1.GetJobRequest", b'job_id: "reflected-1"')
answer = raw_get(encoded, metadata=auth, timeout=20)
out["protoc_got"] = protoc_codec("decode", "tickwork.admin.v1.Job", answer).decode()

health = load_pool(reflect("v1", v1, [{"file_containing_symbol": "grpc.health.v1.Health"}]))
out["health"] = unary(health, "grpc.health.v1.Health", "Check", {"service": admin})

# v1alpha, which older tools still use, answers the same from the same descriptors.
alpha_listed, alpha_by_name = reflect(
    "v1alpha", v1alpha, [{"list_services": ""}, {"file_by_filename": "tickwork/admin/v1/admin.proto"}]
)
out["v1alpha_services"] = sorted(s.name for s in alpha_listed.list_services_response.service)
out["v1alpha_same_files"] = list(alpha_by_name.file_descriptor_response.file_descriptor_proto) == list(
    by_name.file_descriptor_response.file_descriptor_proto
)
alpha_pool = load_pool([alpha_by_name])
out["v1alpha_get"] = unary(alpha_pool, admin, "GetJob", {"job_id": "reflected-1"}, auth)

print(json.dumps(out))
