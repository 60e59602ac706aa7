// src/registry owns environment discovery and loading, the environment protocol routes, env serve and tenant config.
import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { EnvironmentRegistry, REGISTRY_PATHS } from './environment-registry.service';
import type { RegistryPaths } from './registry-loader';
import { EnvironmentsController } from './environments.controller';

/** Environment discovery at boot and the environments API. Global: one registry, loaded once, for every module. */
@Global()
@Module({
  controllers: [EnvironmentsController],
  providers: [
    {
      provide: REGISTRY_PATHS,
      useFactory: (config: AppConfig): RegistryPaths => ({ hostRoot: config.install.root, pluginsDir: config.pluginsDir }),
      inject: [AppConfig],
    },
    EnvironmentRegistry,
  ],
  exports: [EnvironmentRegistry, REGISTRY_PATHS],
})
export class RegistryModule {}
