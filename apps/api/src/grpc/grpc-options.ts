/** The gRPC listener: protos, limits, TLS, and server reflection from protoc's descriptors (so grpcurl works without .proto files). */
import { ServerCredentials, type Server } from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { Transport, type GrpcOptions } from '@nestjs/microservices';
import type { ApiListenConfig } from '@tickwork/config';
import type { DescriptorIndex } from './descriptor-index';
import { loaderOptions, PROTO_FILES, protoDirectory } from './proto-files';
import { addReflection, DESCRIPTOR_SET_FILE, loadDescriptorIndex } from './reflection';

/** Options for app.connectMicroservice: tickwork.admin.v1, grpc.health.v1 and reflection on one server. */
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

/** Refuses to start when a served service or method is missing from the descriptor set reflection answers from. */
function assertReflectable(pkg: PackageDefinition, descriptors: DescriptorIndex): void {
  const missing: string[] = [];
  for (const [name, definition] of Object.entries(pkg)) {
    if ('format' in definition) continue; // a message or enum, not a service
    if (!descriptors.services.includes(name)) missing.push(name);
    for (const method of Object.values(definition)) {
      // path is /package.Service/Method; the symbol is package.Service.Method.
      const symbol = method.path.slice(1).replace('/', '.');
      if (!descriptors.fileOfSymbol(symbol)) missing.push(symbol);
    }
  }
  if (missing.length > 0) {
    throw new Error(
      `schemas/proto/${DESCRIPTOR_SET_FILE} lacks ${missing.join(', ')}: run npm run proto:descriptors`,
    );
  }
}
