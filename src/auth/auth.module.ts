// src/auth owns users, API keys, the guard and the failed-authentication limiter.
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { UsersController } from './users.controller';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

@Module({
  controllers: [UsersController],
  providers: [UsersRepository, AuthService, AuthFailureLimiter, UsersService, { provide: APP_GUARD, useClass: AuthGuard }],
  exports: [UsersService],
})
export class AuthModule {}
