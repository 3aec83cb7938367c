import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  availablePermissions,
  cloneRole,
  createRole,
  deleteRole,
  effectivePermissionsAt,
  getRole,
  listRoles,
  updateRole,
  type PermissionCatalogView,
  type RoleView,
} from '../src/services/roles.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('Role')
export class RoleObject implements RoleView {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field(() => String, { description: 'system, partner or organization' })
  scope!: RoleView['scope'];

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => [String], { description: 'as granted, wildcards included' })
  permissions!: string[];

  @Field(() => Boolean, { description: 'seeded and read-only' })
  isSystem!: boolean;

  @Field(() => Boolean, { description: 'members must sign in with a second factor' })
  requireMfa!: boolean;

  @Field(() => ID, { nullable: true })
  createdBy!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String)
  updatedAt!: string;
}

const RolePage = PageOf(RoleObject, 'RolePage');

@ObjectType('PermissionResource')
class PermissionResourceObject {
  @Field(() => String)
  resource!: string;

  @Field(() => [String])
  actions!: string[];
}

@ObjectType('PermissionCatalog')
class PermissionCatalogObject implements PermissionCatalogView {
  @Field(() => [PermissionResourceObject])
  resources!: PermissionResourceObject[];

  @Field(() => [String], { description: 'every `resource:action`' })
  permissions!: string[];
}

@ArgsType()
class RoleListArgs extends PageArgs {
  @Field(() => String, { nullable: true, description: 'system, partner or organization' })
  scope?: string;
}

@InputType()
class CreateRoleInput {
  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'partner or organization' })
  scope!: string;

  @Field(() => ID, { nullable: true, description: 'organization roles: the organization (organization callers: their own)' })
  orgId?: string;

  @Field(() => [String], { description: '`resource:action` entries, `*` wildcards allowed; only permissions the caller holds' })
  permissions!: string[];

  @Field(() => String, { nullable: true })
  description?: string | null;

  @Field(() => Boolean, { nullable: true })
  requireMfa?: boolean;
}

@InputType()
class UpdateRoleInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => [String], { nullable: true })
  permissions?: string[];

  @Field(() => String, { nullable: true })
  description?: string | null;

  @Field(() => Boolean, { nullable: true })
  requireMfa?: boolean;
}

@InputType()
class CloneRoleInput {
  @Field(() => String, { nullable: true, description: 'default: "<name> (copy)"' })
  name?: string;

  @Field(() => ID, { nullable: true, description: "clone into this organization; default: the caller's own organization or partner" })
  orgId?: string;
}

@Resolver(() => RoleObject)
export class RoleResolver {
  @Query(() => RolePage, { description: 'System roles and the custom roles the caller sees.' })
  roles(@Ctx() { ctx }: GraphqlContext, @Args(() => RoleListArgs) args: RoleListArgs) {
    return listRoles(ctx, args);
  }

  @Query(() => RoleObject)
  role(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getRole(ctx, id);
  }

  @Query(() => PermissionCatalogObject, { description: 'Every permission a role can grant.' })
  availablePermissions(@Ctx() { ctx }: GraphqlContext) {
    return availablePermissions(ctx);
  }

  @Mutation(() => RoleObject, { description: 'Needs an MFA session.' })
  createRole(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateRoleInput) input: CreateRoleInput) {
    return createRole(ctx, input);
  }

  @Mutation(() => RoleObject, { description: 'Custom roles only; needs an MFA session.' })
  updateRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateRoleInput) input: UpdateRoleInput) {
    return updateRole(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Custom roles nobody holds; needs an MFA session.' })
  async deleteRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteRole(ctx, id);
    return true;
  }

  @Mutation(() => RoleObject, { description: 'Needs an MFA session.' })
  cloneRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => CloneRoleInput, { nullable: true }) input?: CloneRoleInput) {
    return cloneRole(ctx, id, input ?? {});
  }

  @FieldResolver(() => [String], { description: 'The catalog permissions the role grants, wildcards expanded (REST `effective-permissions`).' })
  effectivePermissions(@Root() role: RoleView): string[] {
    return effectivePermissionsAt(role.scope, role.permissions);
  }
}
