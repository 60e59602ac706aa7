import { Column, Entity, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

export type Role = 'admin' | 'user';

@Entity('users')
export class UserEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ type: 'varchar', length: 64, unique: true })
  name!: string;

  @Column({ type: 'varchar', length: 16 })
  role!: Role;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
