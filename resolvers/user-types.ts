import { Field, ID, ObjectType } from 'type-graphql';
import type { UserView } from '../src/services/user-view.js';

/** How a user appears in GraphQL, mirroring `UserView` (never the password hash, MFA secret or invite token). */
@ObjectType('User')
export class UserObject implements UserView {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  email!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'active, invited or disabled' })
  status!: UserView['status'];

  @Field(() => Boolean)
  mfaEnabled!: boolean;

  @Field(() => String, { nullable: true, description: 'ISO 8601' })
  lastLoginAt!: string | null;

  @Field(() => String, { description: 'ISO 8601' })
  createdAt!: string;

  @Field(() => String, { description: 'ISO 8601' })
  updatedAt!: string;

  @Field(() => String, { nullable: true, description: 'system, partner or organization: the membership the user is seen through' })
  scope!: UserView['scope'];

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => ID, { nullable: true })
  roleId!: string | null;
}
