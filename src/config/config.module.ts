// src/config owns the settings (defaults, YAML file, OPENTINKER_* variables, flags) and where the installation's files are.
import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/** The process's settings (with the installation's layout, `config.install`), for every module to inject. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: AppConfig, useValue: config }], exports: [AppConfig] };
  }
}
