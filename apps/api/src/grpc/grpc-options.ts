/** The gRPC listener: protos, limits, TLS, and server reflection (so grpcurl works without .proto files). */
import { ServerCredentials, type Server } from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { Transport, type GrpcOptions } from '@nestjs/microservices';
import type { ApiListenConfig } from '@tickwork/config';
import { loaderOptions, PROTO_FILES, protoDirectory } from './proto-files';
import { tolerateUndecodableRequests } from './request-decoding';

/** Options for app.connectMicroservice: tickwork.admin.v1 and grpc.health.v1 on one server. */
export function grpcServerOptions(listen: ApiListenConfig): GrpcOptions {
  const { includeDirs, ...loader } = loaderOptions();
  return {
    transport: Transport.GRPC,
    options: {
      url: `${listen.grpc.host}:${listen.grpc.port}`,
      package: ['tickwork.admin.v1', 'grpc.health.v1'],
      protoPath: PROTO_FILES.map((f) => `${protoDirectory()}/${f}`),
      loader: { ...loader, includeDirs },
      maxReceiveMessageLength: listen.grpc.maxMessageBytes,
      maxSendMessageLength: 16 * 1024 * 1024,
      credentials: listen.tls
        ? ServerCredentials.createSsl(
            null,
            [{ private_key: listen.tls.key, cert_chain: listen.tls.cert }],
            false,
          )
        : ServerCredentials.createInsecure(),
      onLoadPackageDefinition: (pkg: PackageDefinition, server: Pick<Server, 'addService'>) => {
        tolerateUndecodableRequests(pkg);
        new ReflectionService(pkg).addToServer(server);
      },
      gracefulShutdown: true,
    },
  };
}
