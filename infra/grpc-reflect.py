#!/usr/bin/python3
"""Calls a gRPC server knowing only what its server reflection says (a small grpcurl, from Debian).

Needs: apt-get install python3-grpcio python3-protobuf protobuf-compiler grpc-proto
Usage (Debian's /usr/bin/python3, which has grpcio):
  /usr/bin/python3 infra/grpc-reflect.py ADDRESS list
  /usr/bin/python3 infra/grpc-reflect.py ADDRESS call SERVICE/METHOD 'JSON'
A bearer token for the call comes from $TOKEN; the answer is printed as JSON.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def reflection_messages(workdir):
    """grpc.reflection.v1's messages, compiled by protoc from Debian's grpc-proto."""
    proto = "grpc/reflection/v1/reflection.proto"
    subprocess.run(["protoc", "-I/usr/share/grpc-proto", f"--python_out={workdir}", proto], check=True)
    spec = importlib.util.spec_from_file_location("reflection_pb2", f"{workdir}/{proto[:-6]}_pb2.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ask(channel, pb, **request):
    call = channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=pb.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb.ServerReflectionResponse.FromString,
    )
    (answer,) = call(iter([pb.ServerReflectionRequest(**request)]), timeout=10)
    if answer.HasField("error_response"):
        sys.exit(f"reflection: {answer.error_response.error_message}")
    return answer


def pool_for(channel, pb, symbol):
    """A DescriptorPool holding the file that defines symbol and everything it imports."""
    answer = ask(channel, pb, file_containing_symbol=symbol)
    files = {}
    for raw in answer.file_descriptor_response.file_descriptor_proto:
        files[descriptor_pb2.FileDescriptorProto.FromString(raw).name] = raw
    pool, added = descriptor_pool.DescriptorPool(), set()

    def add(name):
        if name not in added:
            added.add(name)
            for dep in descriptor_pb2.FileDescriptorProto.FromString(files[name]).dependency:
                add(dep)
            pool.AddSerializedFile(files[name])

    for name in files:
        add(name)
    return pool


def message_class(pool, descriptor):
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def main(address, command, *args):
    channel = grpc.insecure_channel(address)
    with tempfile.TemporaryDirectory() as workdir:
        pb = reflection_messages(workdir)
        if command == "list":
            for service in ask(channel, pb, list_services="").list_services_response.service:
                print(service.name)
        elif command == "call":
            service, method = args[0].rsplit("/", 1)
            pool = pool_for(channel, pb, service)
            rpc = pool.FindServiceByName(service).FindMethodByName(method)
            request_class = message_class(pool, rpc.input_type)
            response_class = message_class(pool, rpc.output_type)
            call = channel.unary_unary(
                f"/{service}/{method}",
                request_serializer=request_class.SerializeToString,
                response_deserializer=response_class.FromString,
            )
            token = os.environ.get("TOKEN")
            metadata = [("authorization", f"Bearer {token}")] if token else []
            request = json_format.Parse(args[1] if len(args) > 1 else "{}", request_class())
            try:
                answer = call(request, metadata=metadata, timeout=10)
            except grpc.RpcError as e:
                sys.exit(f"{e.code().name}: {e.details()}")
            print(json.dumps(json_format.MessageToDict(answer, preserving_proto_field_name=True), indent=2))
        else:
            sys.exit(__doc__)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
