/** The gRPC listener: protos, limits, TLS, and server reflection from protoc's descriptors (so grpcurl works without .proto files). */
import { ServerCredentials, type Server } from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { Transport, type GrpcOptions } from '@nestjs/microservices';
import type { ApiListenConfig } from '@tickwork/config';
import type { DescriptorIndex } from './descriptor-index';
import { loaderOptions, PROTO_FILES, protoDirectory } from './proto-files';
import { addReflection, DESCRIPTOR_SET_FILE, loadDescriptorIndex } from './reflection';

/** Options for app.connectMicroservice: tickwork.admin.v1 and grpc.health.v1 on one server. */
export function grpcServerOptions(listen: ApiListenConfig): GrpcOptions {
  const { includeDirs, ...loader } = loaderOptions();
  const descriptors = loadDescriptorIndex();
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
        assertReflectable(pkg, descriptors);
        addReflection(server, descriptors);
      },
      gracefulShutdown: true,
    },
  };
}

/** Refuses to start when a served service is missing from the descriptor set reflection answers from. */
function assertReflectable(pkg: PackageDefinition, descriptors: DescriptorIndex): void {
  const served = Object.entries(pkg)
    .filter(([, definition]) => !('format' in definition))
    .map(([name]) => name);
  const missing = served.filter((name) => !descriptors.services.includes(name));
  if (missing.length > 0) {
    throw new Error(
      `schemas/proto/${DESCRIPTOR_SET_FILE} lacks ${missing.join(', ')}: run npm run proto:descriptors`,
    );
  }
}
