import { Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../core/api-errors.decorator';
import { ZodBody, ZodResponse } from '../core/zod-api.decorators';
import { CurrentUser, OptionalAuth } from './auth.decorators';
import type { Principal } from './principal';
import { ApiKeyDto, apiKeyDto, CreatedUserDto, CreateKeyDto, CreateUserDto, IssuedKeyDto, UserDto, userDto } from './users.dto';
import { UsersService } from './users.service';

@ApiTags('users')
@ApiBearerAuth()
@Controller('v1')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post('users')
  @OptionalAuth()
  @ApiOperation({
    summary: 'Create a user and its first API key',
    description: 'Admins create users (and admins). Without a key this works only when open registration is enabled.',
  })
  @ZodResponse(201, CreatedUserDto)
  @ApiErrors(400, 401, 403, 409)
  async create(@CurrentUser() caller: Principal | undefined, @ZodBody(CreateUserDto) body: CreateUserDto): Promise<CreatedUserDto> {
    const { user, entity, key } = await this.users.createUser(caller, body.name, body.role);
    return { user: userDto(user), api_key: { ...apiKeyDto(entity), key } };
  }

  @Get('users')
  @ApiOperation({ summary: 'List users (admin)' })
  @ZodResponse(200, UserDto.array())
  @ApiErrors(401, 403)
  async list(@CurrentUser() caller: Principal): Promise<UserDto[]> {
    return (await this.users.listUsers(caller)).map(userDto);
  }

  @Get('users/me')
  @ApiOperation({ summary: 'The calling user' })
  @ZodResponse(200, UserDto)
  @ApiErrors(401)
  async me(@CurrentUser() caller: Principal): Promise<UserDto> {
    return userDto(await this.users.getUser(caller.userId));
  }

  @Post('keys')
  @ApiOperation({ summary: 'Create an API key for the calling user', description: 'The key is returned once.' })
  @ZodResponse(201, IssuedKeyDto)
  @ApiErrors(400, 401)
  async createKey(@CurrentUser() caller: Principal, @ZodBody(CreateKeyDto) body: CreateKeyDto): Promise<IssuedKeyDto> {
    const { entity, key } = await this.users.createKey(caller, body.name);
    return { ...apiKeyDto(entity), key };
  }

  @Get('keys')
  @ApiOperation({ summary: "List the calling user's API keys (secrets are never shown again)" })
  @ZodResponse(200, ApiKeyDto.array())
  @ApiErrors(401)
  async listKeys(@CurrentUser() caller: Principal): Promise<ApiKeyDto[]> {
    return (await this.users.listKeys(caller)).map(apiKeyDto);
  }

  @Delete('keys/:id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke an API key' })
  @ZodResponse(200, ApiKeyDto)
  @ApiErrors(400, 401, 404)
  async revokeKey(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<ApiKeyDto> {
    return apiKeyDto(await this.users.revokeKey(caller, id));
  }
}
