import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { iso } from '../core/database/columns';
import type { ApiKeyEntity } from './api-key.entity';
import type { Role, UserEntity } from './user.entity';

export class CreateUserDto {
  @ApiProperty({ example: 'alice', description: 'Unique; letters, digits, dot, dash, underscore' })
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{2,64}$/, { message: 'name must be 2–64 letters, digits, dots, dashes or underscores' })
  name!: string;

  @ApiPropertyOptional({ enum: ['user', 'admin'], default: 'user' })
  @IsOptional()
  @IsIn(['user', 'admin'])
  role?: Role;
}

export class CreateKeyDto {
  @ApiProperty({ example: 'laptop', description: 'A label to tell keys apart' })
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  name!: string;
}

export class UserDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ enum: ['user', 'admin'] }) role!: Role;
  @ApiProperty({ format: 'date-time' }) created_at!: string;

  static of(u: UserEntity): UserDto {
    return { id: u.id, name: u.name, role: u.role, created_at: iso(u.createdAt)! };
  }
}

export class ApiKeyDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'First characters of the key', example: 'otk_3fA9x2Lq' }) prefix!: string;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) last_used_at!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) revoked_at!: string | null;

  static of(k: ApiKeyEntity): ApiKeyDto {
    return {
      id: k.id,
      name: k.name,
      prefix: k.prefix,
      created_at: iso(k.createdAt)!,
      last_used_at: iso(k.lastUsedAt),
      revoked_at: iso(k.revokedAt),
    };
  }
}

export class IssuedKeyDto extends ApiKeyDto {
  @ApiProperty({ description: 'The secret key. Shown once: store it now.', example: 'otk_…' })
  key!: string;
}

export class CreatedUserDto {
  @ApiProperty({ type: UserDto }) user!: UserDto;
  @ApiProperty({ type: IssuedKeyDto }) api_key!: IssuedKeyDto;
}
