import { DynamicModule, Module } from '@nestjs/common';
import { EnvironmentRegistry, REGISTRY_PATHS } from './environment-registry.service';
import type { RegistryPaths } from './registry-loader';
import { EnvironmentsController } from './environments.controller';

/** Environment discovery at boot and the environments API. Global: one registry, loaded once, for every module. */
@Module({})
export class RegistryModule {
  static forRoot(paths: RegistryPaths): DynamicModule {
    return {
      module: RegistryModule,
      global: true,
      controllers: [EnvironmentsController],
      providers: [{ provide: REGISTRY_PATHS, useValue: paths }, EnvironmentRegistry],
      exports: [EnvironmentRegistry, REGISTRY_PATHS],
    };
  }
}
