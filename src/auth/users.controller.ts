import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../core/api-errors.decorator';
import { CurrentUser, OptionalAuth } from './auth.decorators';
import type { Principal } from './principal';
import { ApiKeyDto, CreatedUserDto, CreateKeyDto, CreateUserDto, IssuedKeyDto, UserDto } from './users.dto';
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
  @ApiResponse({ status: 201, type: CreatedUserDto })
  @ApiErrors(400, 401, 403, 409)
  async create(@CurrentUser() caller: Principal | undefined, @Body() body: CreateUserDto): Promise<CreatedUserDto> {
    const { user, entity, key } = await this.users.createUser(caller, body.name, body.role);
    return { user: UserDto.of(user), api_key: { ...ApiKeyDto.of(entity), key } };
  }

  @Get('users')
  @ApiOperation({ summary: 'List users (admin)' })
  @ApiResponse({ status: 200, type: [UserDto] })
  @ApiErrors(401, 403)
  async list(@CurrentUser() caller: Principal): Promise<UserDto[]> {
    return (await this.users.listUsers(caller)).map(UserDto.of);
  }

  @Get('users/me')
  @ApiOperation({ summary: 'The calling user' })
  @ApiResponse({ status: 200, type: UserDto })
  @ApiErrors(401)
  async me(@CurrentUser() caller: Principal): Promise<UserDto> {
    return UserDto.of(await this.users.getUser(caller.userId));
  }

  @Post('keys')
  @ApiOperation({ summary: 'Create an API key for the calling user', description: 'The key is returned once.' })
  @ApiResponse({ status: 201, type: IssuedKeyDto })
  @ApiErrors(400, 401)
  async createKey(@CurrentUser() caller: Principal, @Body() body: CreateKeyDto): Promise<IssuedKeyDto> {
    const { entity, key } = await this.users.createKey(caller, body.name);
    return { ...ApiKeyDto.of(entity), key };
  }

  @Get('keys')
  @ApiOperation({ summary: "List the calling user's API keys (secrets are never shown again)" })
  @ApiResponse({ status: 200, type: [ApiKeyDto] })
  @ApiErrors(401)
  async listKeys(@CurrentUser() caller: Principal): Promise<ApiKeyDto[]> {
    return (await this.users.listKeys(caller)).map(ApiKeyDto.of);
  }

  @Delete('keys/:id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke an API key' })
  @ApiResponse({ status: 200, type: ApiKeyDto })
  @ApiErrors(400, 401, 404)
  async revokeKey(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<ApiKeyDto> {
    return ApiKeyDto.of(await this.users.revokeKey(caller, id));
  }
}
